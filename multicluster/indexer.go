package multicluster

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
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
// that joins afterwards, with an indexer conflict. FieldIndexer is the same
// value for the same manager and refuses a second registration of a type
// and field as an indexer conflict, which indexer.Register answers without
// error for the same *Index and with a *ConflictError for another.
func FieldIndexer(mgr mcmanager.Manager) client.FieldIndexer {
	indexers.mu.Lock()
	defer indexers.mu.Unlock()
	if fi, ok := indexers.m[mgr]; ok {
		return fi
	}
	fi := &fieldIndexer{mgr: mgr, fields: map[indexedField]bool{}}
	indexers.m[mgr] = fi
	return fi
}

// indexers holds the FieldIndexer of each manager (a process has one or
// two; they live as long as it does).
var indexers = struct {
	mu sync.Mutex
	m  map[mcmanager.Manager]*fieldIndexer
}{m: map[mcmanager.Manager]*fieldIndexer{}}

type indexedField struct {
	typ   reflect.Type
	field string
}

type fieldIndexer struct {
	mgr    mcmanager.Manager
	mu     sync.Mutex
	fields map[indexedField]bool
}

// IndexField implements client.FieldIndexer.
func (f *fieldIndexer) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := indexedField{typ: reflect.TypeOf(obj), field: field}
	if f.fields[k] {
		// The words controller-runtime's cache uses, which indexer.Register
		// recognises.
		return fmt.Errorf("indexer conflict: field %q of %T is indexed already", field, obj)
	}
	if err := f.mgr.GetFieldIndexer().IndexField(ctx, obj, field, extract); err != nil {
		return err
	}
	f.fields[k] = true
	return nil
}
