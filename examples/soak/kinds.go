package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/examples/at"
	atv1alpha1 "github.com/steadyk8s/steady/examples/at/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/bucket"
	bucketv1alpha1 "github.com/steadyk8s/steady/examples/bucket/api/v1alpha1"
	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/tenant"
	tenancyv1alpha1 "github.com/steadyk8s/steady/examples/tenant/api/v1alpha1"
	"github.com/steadyk8s/steady/examples/usernamespace"
	identityv1alpha1 "github.com/steadyk8s/steady/examples/usernamespace/api/v1alpha1"
)

// kind is one example operator's owner kind as the soak drives and checks
// it.
type kind struct {
	// name is the example's name, used in object names and the report.
	name string
	// namespaced owners live in the soak's namespace.
	namespaced bool
	// newObject returns an empty owner.
	newObject func() client.Object
	// setSpec sets a random spec; removals (an emptied list, a field set
	// back to zero) are among the outcomes.
	setSpec func(obj client.Object, rng *rand.Rand)
	// child names a child the other writer marks.
	child func(obj client.Object) (client.Object, types.NamespacedName)
	// ready, when set, is the Ready condition's status and reason that the
	// owner's spec calls for; nil means True.
	ready func(obj client.Object) (metav1.ConditionStatus, string)
	// check compares a live owner's children with its spec once its Ready
	// condition is as its spec calls for.
	check func(ctx context.Context, s *state, obj client.Object, bad func(string, ...any))
	// checkGone checks what a deleted owner must not leave behind besides
	// the objects that point at it (see [state.orphans]).
	checkGone func(ctx context.Context, s *state, key types.NamespacedName, bad func(string, ...any))
}

func (s *state) kinds() []kind {
	return []kind{
		{
			name:      "user",
			newObject: func() client.Object { return &identityv1alpha1.User{} },
			setSpec: func(obj client.Object, rng *rand.Rand) {
				u := obj.(*identityv1alpha1.User)
				u.Spec = identityv1alpha1.UserSpec{ClusterRole: "edit"}
				for i := range rng.IntN(3) {
					u.Spec.Groups = append(u.Spec.Groups, fmt.Sprintf("group-%d", i))
				}
				if rng.IntN(2) == 0 {
					u.Spec.ResourceQuota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(strconv.Itoa(5 + rng.IntN(5)))}
				}
			},
			child: func(obj client.Object) (client.Object, types.NamespacedName) {
				return &corev1.Namespace{}, types.NamespacedName{Name: usernamespace.NamespaceName(obj.GetName())}
			},
			check: func(ctx context.Context, s *state, obj client.Object, bad func(string, ...any)) {
				u := obj.(*identityv1alpha1.User)
				nsName := usernamespace.NamespaceName(u.Name)
				ns := &corev1.Namespace{}
				if err := s.c.Get(ctx, types.NamespacedName{Name: nsName}, ns); err != nil || !metav1.IsControlledBy(ns, u) {
					bad("namespace %s missing or not controlled by it (%v)", nsName, err)
					return
				}
				rb := &rbacv1.RoleBinding{}
				if err := s.c.Get(ctx, types.NamespacedName{Namespace: nsName, Name: usernamespace.RoleBindingName}, rb); err != nil {
					bad("RoleBinding %s/%s: %v", nsName, usernamespace.RoleBindingName, err)
				} else {
					var got []string
					for _, sub := range rb.Subjects {
						if sub.Kind == rbacv1.GroupKind {
							got = append(got, sub.Name)
						}
					}
					if !slices.Equal(got, u.Spec.Groups) {
						bad("RoleBinding %s/%s groups %v, spec %v", nsName, rb.Name, got, u.Spec.Groups)
					}
				}
				rq := &corev1.ResourceQuota{}
				err := s.c.Get(ctx, types.NamespacedName{Namespace: nsName, Name: usernamespace.ResourceQuotaName}, rq)
				switch {
				case len(u.Spec.ResourceQuota) > 0 && err != nil:
					bad("ResourceQuota %s/%s missing: %v", nsName, usernamespace.ResourceQuotaName, err)
				case len(u.Spec.ResourceQuota) > 0 && !rq.Spec.Hard.Pods().Equal(*u.Spec.ResourceQuota.Pods()):
					bad("ResourceQuota %s/%s pods %s, spec %s", nsName, rq.Name, rq.Spec.Hard.Pods(), u.Spec.ResourceQuota.Pods())
				case len(u.Spec.ResourceQuota) == 0 && err == nil:
					bad("ResourceQuota %s/%s left after its removal from the spec", nsName, rq.Name)
				}
			},
			checkGone: func(ctx context.Context, s *state, key types.NamespacedName, bad func(string, ...any)) {
				ns := &corev1.Namespace{}
				if err := s.c.Get(ctx, types.NamespacedName{Name: usernamespace.NamespaceName(key.Name)}, ns); err == nil {
					bad("namespace %s left (deleting: %v)", ns.Name, !ns.DeletionTimestamp.IsZero())
				}
			},
		},
		{
			name:      "tenant",
			newObject: func() client.Object { return &tenancyv1alpha1.Tenant{} },
			setSpec: func(obj client.Object, rng *rand.Rand) {
				t := obj.(*tenancyv1alpha1.Tenant)
				t.Spec = tenancyv1alpha1.TenantSpec{Owner: tenancyv1alpha1.TenantOwner{Kind: "User", Name: []string{"alice", "bob"}[rng.IntN(2)]}}
				switch rng.IntN(3) {
				case 0: // no quota: the namespace is admitted
				case 1:
					t.Spec.NamespaceQuota = ptr.To[int32](1)
				case 2: // quota 0: the tenant's objects leave its namespace
					t.Spec.NamespaceQuota = ptr.To[int32](0)
				}
				if rng.IntN(2) == 0 {
					t.Spec.ResourceQuota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(strconv.Itoa(5 + rng.IntN(5)))}
				}
			},
			child: func(obj client.Object) (client.Object, types.NamespacedName) {
				return &corev1.ResourceQuota{}, types.NamespacedName{Namespace: obj.GetName(), Name: tenant.ResourceQuotaName}
			},
			// With a namespace quota of 0 its namespace is over the quota:
			// Ready is False by design, with the reason OverQuota.
			ready: func(obj client.Object) (metav1.ConditionStatus, string) {
				if q := obj.(*tenancyv1alpha1.Tenant).Spec.NamespaceQuota; q != nil && *q == 0 {
					return metav1.ConditionFalse, tenancyv1alpha1.ReasonOverQuota
				}
				return metav1.ConditionTrue, ""
			},
			check: func(ctx context.Context, s *state, obj client.Object, bad func(string, ...any)) {
				t := obj.(*tenancyv1alpha1.Tenant)
				ns := t.Name // each soak Tenant has one namespace of its name
				admitted := t.Spec.NamespaceQuota == nil || *t.Spec.NamespaceQuota > 0
				if got := t.Status.Namespaces; admitted != slices.Equal(got, []string{ns}) {
					bad("status.namespaces %v, namespace %s admitted: %v", got, ns, admitted)
				}
				rq := &corev1.ResourceQuota{}
				rqErr := s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: tenant.ResourceQuotaName}, rq)
				rb := &rbacv1.RoleBinding{}
				rbErr := s.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: tenant.OwnerRoleBindingName}, rb)
				if !admitted {
					if rqErr == nil || rbErr == nil {
						bad("namespace %s over the quota 0 still has the tenant's ResourceQuota (%v) or RoleBinding (%v)", ns, rqErr == nil, rbErr == nil)
					}
					return
				}
				switch {
				case rqErr != nil || !metav1.IsControlledBy(rq, t):
					bad("ResourceQuota %s/%s missing or not controlled by it: %v", ns, tenant.ResourceQuotaName, rqErr)
				case len(rq.Spec.Hard) != len(t.Spec.ResourceQuota) || len(rq.Spec.Hard) > 0 && !rq.Spec.Hard.Pods().Equal(*t.Spec.ResourceQuota.Pods()):
					bad("ResourceQuota %s/%s hard %v, spec %v", ns, rq.Name, rq.Spec.Hard, t.Spec.ResourceQuota)
				}
				switch {
				case rbErr != nil || !metav1.IsControlledBy(rb, t):
					bad("RoleBinding %s/%s missing or not controlled by it: %v", ns, tenant.OwnerRoleBindingName, rbErr)
				case len(rb.Subjects) != 1 || rb.Subjects[0].Name != t.Spec.Owner.Name:
					bad("RoleBinding %s/%s subjects %v, owner %s", ns, rb.Name, rb.Subjects, t.Spec.Owner.Name)
				}
			},
			checkGone: func(context.Context, *state, types.NamespacedName, func(string, ...any)) {},
		},
		{
			name:       "at",
			namespaced: true,
			newObject:  func() client.Object { return &atv1alpha1.At{} },
			setSpec: func(obj client.Object, rng *rand.Rand) {
				a := obj.(*atv1alpha1.At)
				// Due at once; a later spec change does not run it again
				// (the Pod exists), but observedGeneration follows.
				a.Spec = atv1alpha1.AtSpec{Schedule: "2020-01-01T00:00:00Z", Command: fmt.Sprintf("echo %d", rng.IntN(100))}
			},
			child: func(obj client.Object) (client.Object, types.NamespacedName) {
				return &corev1.Pod{}, types.NamespacedName{Namespace: obj.GetNamespace(), Name: at.PodName(obj.(*atv1alpha1.At))}
			},
			check: func(ctx context.Context, s *state, obj client.Object, bad func(string, ...any)) {
				a := obj.(*atv1alpha1.At)
				pod := &corev1.Pod{}
				if err := s.c.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: at.PodName(a)}, pod); err != nil || !metav1.IsControlledBy(pod, a) {
					bad("Pod %s missing or not controlled by it (%v)", at.PodName(a), err)
				}
				if a.Status.Phase != atv1alpha1.PhaseDone {
					bad("phase %s, want Done", a.Status.Phase)
				}
			},
			checkGone: func(context.Context, *state, types.NamespacedName, func(string, ...any)) {},
		},
		{
			name:       "bucket",
			namespaced: true,
			newObject:  func() client.Object { return &bucketv1alpha1.Bucket{} },
			setSpec: func(obj client.Object, rng *rand.Rand) {
				b := obj.(*bucketv1alpha1.Bucket)
				b.Spec = bucketv1alpha1.BucketSpec{Versioning: rng.IntN(2) == 0, DeletionPolicy: bucketv1alpha1.DeletionPolicyDelete}
			},
			child: func(obj client.Object) (client.Object, types.NamespacedName) {
				return &corev1.Secret{}, types.NamespacedName{Namespace: obj.GetNamespace(), Name: bucket.SecretName(obj.(*bucketv1alpha1.Bucket))}
			},
			check: func(ctx context.Context, s *state, obj client.Object, bad func(string, ...any)) {
				b := obj.(*bucketv1alpha1.Bucket)
				sec := &corev1.Secret{}
				if err := s.c.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: bucket.SecretName(b)}, sec); err != nil || !metav1.IsControlledBy(sec, b) {
					bad("Secret %s missing or not controlled by it (%v)", bucket.SecretName(b), err)
				}
				name := bucket.ExternalName(b)
				if ok, err := s.s3.BucketExists(ctx, name); err != nil || !ok {
					bad("external bucket %s: exists %v, %v", name, ok, err)
					return
				}
				v, err := s.s3.GetBucketVersioning(ctx, name)
				if err != nil || v.Enabled() != b.Spec.Versioning {
					bad("external bucket %s: versioning %q, spec %v (%v)", name, v.Status, b.Spec.Versioning, err)
				}
			},
			checkGone: func(ctx context.Context, s *state, key types.NamespacedName, bad func(string, ...any)) {
				name := key.Namespace + "-" + key.Name
				if ok, err := s.s3.BucketExists(ctx, name); err != nil || ok {
					bad("external bucket %s left behind (exists %v, %v)", name, ok, err)
				}
			},
		},
		{
			name:       "bundle",
			namespaced: true,
			newObject:  func() client.Object { return &bundlev1alpha1.Bundle{} },
			setSpec: func(obj client.Object, rng *rand.Rand) {
				b := obj.(*bundlev1alpha1.Bundle)
				b.Spec = bundlev1alpha1.BundleSpec{}
				for _, m := range bundleMembers {
					if rng.IntN(2) == 0 {
						b.Spec.Manifests = append(b.Spec.Manifests, bundlev1alpha1.Source{Inline: fmt.Sprintf(
							"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%s\n  namespace: %s\ndata:\n  value: %q\n",
							b.Name, m, b.Namespace, strconv.Itoa(rng.IntN(100)))})
					}
				}
			},
			child: func(obj client.Object) (client.Object, types.NamespacedName) {
				return &corev1.ConfigMap{}, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName() + "-" + bundleMembers[0]}
			},
			check: func(ctx context.Context, s *state, obj client.Object, bad func(string, ...any)) {
				b := obj.(*bundlev1alpha1.Bundle)
				for _, m := range bundleMembers {
					name := b.Name + "-" + m
					want := ""
					for _, src := range b.Spec.Manifests {
						if strings.Contains(src.Inline, "name: "+name+"\n") {
							_, v, _ := strings.Cut(src.Inline, "value: ")
							want = strings.TrimSpace(v)
						}
					}
					cm := &corev1.ConfigMap{}
					err := s.c.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: name}, cm)
					switch {
					case want == "" && err == nil:
						bad("ConfigMap %s left after its removal from the spec", name)
					case want == "" && apierrors.IsNotFound(err):
					case err != nil:
						bad("ConfigMap %s missing: %v", name, err)
					case strconv.Quote(cm.Data["value"]) != want:
						bad("ConfigMap %s value %q, spec %s", name, cm.Data["value"], want)
					}
				}
			},
			checkGone: func(ctx context.Context, s *state, key types.NamespacedName, bad func(string, ...any)) {
				for _, m := range bundleMembers {
					cm := &corev1.ConfigMap{}
					if err := s.c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-" + m}, cm); err == nil {
						bad("member ConfigMap %s left behind", cm.Name)
					}
				}
			},
		},
	}
}

var bundleMembers = []string{"a", "b", "c"}

// s3Client is what the soak asks the fake S3 server.
type s3Client = *minio.Client
