package applyset

import "time"

// SetOptions is the usable zero value of the options of a [Set]: each field's
// zero value means the default written beside it.
type SetOptions struct {
	// FieldManager applies the members; "steady" when empty.
	FieldManager string
	// Tooling is the parent's tooling annotation, "name/version";
	// DefaultTooling when empty. The parent is written by the field manager
	// "<name>-applyset", as kubectl does.
	Tooling string
	// Force takes over fields of members owned by other field managers.
	Force bool
	// Adopt takes over a parent that another tool manages, or an existing
	// Secret or ConfigMap that is not yet a parent.
	Adopt bool
	// EstablishTimeout bounds the wait for a CRD of the set to be
	// established; 30s when zero.
	EstablishTimeout time.Duration
	// CurrentTimeout, when set, makes Apply wait, before it prunes, until
	// kstatus finds every member Current.
	CurrentTimeout time.Duration
}

// SetOption configures a [Set].
type SetOption interface{ ApplyToSet(*SetOptions) }

// FieldManager is the field manager of the members (default "steady").
type FieldManager string

// ApplyToSet implements [SetOption].
func (f FieldManager) ApplyToSet(o *SetOptions) { o.FieldManager = string(f) }

// Tooling is the parent's tooling annotation ("name/version"). Only tests
// of compatibility should name another tool.
type Tooling string

// ApplyToSet implements [SetOption].
func (t Tooling) ApplyToSet(o *SetOptions) { o.Tooling = string(t) }

// Force takes over conflicting fields of members from other field managers.
type Force struct{}

// ApplyToSet implements [SetOption].
func (Force) ApplyToSet(o *SetOptions) { o.Force = true }

// Adopt takes over a parent whose tooling annotation names another tool, and
// makes an existing Secret or ConfigMap that is not a parent yet (no
// applyset label or tooling annotation) into one. Without it both are
// refused with a [*ToolingError], as kubectl refuses them.
type Adopt struct{}

// ApplyToSet implements [SetOption].
func (Adopt) ApplyToSet(o *SetOptions) { o.Adopt = true }

// WaitCurrent makes Apply wait up to this long, before it prunes, until
// kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status) computes every member
// Current; otherwise it returns a [*NotCurrentError] and prunes nothing, so
// the old objects stay until the new ones are ready.
type WaitCurrent time.Duration

// ApplyToSet implements [SetOption].
func (w WaitCurrent) ApplyToSet(o *SetOptions) { o.CurrentTimeout = time.Duration(w) }

// EstablishTimeout bounds the wait for a CRD of the set to be established
// (default 30s).
type EstablishTimeout time.Duration

// ApplyToSet implements [SetOption].
func (e EstablishTimeout) ApplyToSet(o *SetOptions) { o.EstablishTimeout = time.Duration(e) }

var (
	_ SetOption = FieldManager("")
	_ SetOption = Tooling("")
	_ SetOption = Force{}
	_ SetOption = Adopt{}
	_ SetOption = WaitCurrent(0)
	_ SetOption = EstablishTimeout(0)
)
