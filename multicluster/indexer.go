package multicluster

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/steadyk8s/steady/internal/identity"
)

// FieldIndexer returns the field indexer of every cluster of mgr, current
// and future, to register steady's indexes on:
//
//	err := indexer.ControllerOwner[*rbacv1.RoleBinding]().Register(ctx, multicluster.FieldIndexer(mgr))
//
// Each cluster's cache then has the index, also a cluster that joins later
// (multicluster-runtime's provider adds the indexes it was given to each
// cluster before engaging it), and an Index's List and Find work on that
// cluster's client. Use it, not mgr.GetFieldIndexer(), which is a new
// function value on every call (so steady cannot recognise a second
// registration of the same index) and hands a second registration of a
// field to the provider again: the provider then fails to add every cluster
// that joins afterwards, with an indexer conflict. What FieldIndexer
// returns for one manager shares that manager's registrations (held as
// long as the manager is, not longer) and refuses a second registration of a type
// and field as an indexer conflict, which indexer.Register answers without
// error for the same *Index and with its "already registered" error for
// another.
func FieldIndexer(mgr mcmanager.Manager) client.FieldIndexer {
	var fields *indexedFields
	if !indexed.Update(mgr, func(f *indexedFields) *indexedFields {
		if f == nil {
			f = &indexedFields{m: map[indexedField]bool{}}
		}
		fields = f
		return f
	}) {
		fields = &indexedFields{m: map[indexedField]bool{}} // mgr has no identity: nothing to remember it by
	}
	return &fieldIndexer{mgr: mgr, fields: fields}
}

// indexed holds, per manager (by identity, without keeping it alive: the
// entry goes with the manager), the fields registered through its
// FieldIndexer.
var indexed identity.Map[*indexedFields]

type indexedFields struct {
	mu sync.Mutex
	m  map[indexedField]bool
}

type indexedField struct {
	typ   reflect.Type
	field string
}

// fieldIndexer is made per FieldIndexer call; it stands for its manager's
// indexedFields (so indexer.Register recognises a second registration
// through another FieldIndexer of the same manager) and holds the manager
// only while it is itself held.
type fieldIndexer struct {
	mgr    mcmanager.Manager
	fields *indexedFields
}

// StandsFor implements internal/identity's Standin: a fieldIndexer is
// known by its manager's fields.
func (f *fieldIndexer) StandsFor() any { return f.fields }

// IndexField implements client.FieldIndexer.
func (f *fieldIndexer) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	f.fields.mu.Lock()
	defer f.fields.mu.Unlock()
	k := indexedField{typ: reflect.TypeOf(obj), field: field}
	if f.fields.m[k] {
		// The words controller-runtime's cache uses, which indexer.Register
		// recognises.
		return fmt.Errorf("indexer conflict: field %q of %T is indexed already", field, obj)
	}
	if err := f.mgr.GetFieldIndexer().IndexField(ctx, obj, field, extract); err != nil {
		return err
	}
	f.fields.m[k] = true
	return nil
}
