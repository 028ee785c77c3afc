package controller

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "github.com/steadyk8s/steady/examples/memcached/api/v1alpha1"
	steady "github.com/steadyk8s/steady/reconcile"
)

var _ = Describe("steady's options on the scaffold's type", func() {
	It("refuses WithObservedGeneration, which the type has no field for, when the reconciler is built", func() {
		r := &MemcachedReconciler{Client: k8sClient, Scheme: k8sClient.Scheme()}
		_, err := steady.For(r.Client, r.reconcileMemcached, steady.WithObservedGeneration{})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(
			"WithObservedGeneration cannot work on *v1alpha1.Memcached: the type has no status.observedGeneration field of type int64"))
	})
})

var _ = Describe("Memcached Controller", func() {
	Context("When reconciling a resource", func() {
		const resourceName = "test-resource"

		typeNamespacedName := types.NamespacedName{
			Name:      resourceName,
			Namespace: "default",
		}
		memcached := &cachev1alpha1.Memcached{}

		BeforeEach(func() {
			By("creating the custom resource for the Kind Memcached")
			err := k8sClient.Get(ctx, typeNamespacedName, memcached)
			if err != nil && errors.IsNotFound(err) {
				resource := &cachev1alpha1.Memcached{
					ObjectMeta: metav1.ObjectMeta{
						Name:      resourceName,
						Namespace: "default",
					},
					Spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](1)},
				}
				Expect(k8sClient.Create(ctx, resource)).To(Succeed())
			}
		})

		AfterEach(func() {
			resource := &cachev1alpha1.Memcached{}
			err := k8sClient.Get(ctx, typeNamespacedName, resource)
			Expect(err).NotTo(HaveOccurred())

			By("Cleanup the specific resource instance Memcached")
			Expect(k8sClient.Delete(ctx, resource)).To(Succeed())

			By("the garbage collector deleting the Deployment it owned")
			Eventually(func() bool {
				return errors.IsNotFound(k8sClient.Get(ctx, typeNamespacedName, &appsv1.Deployment{}))
			}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
		})

		It("should successfully reconcile the resource", func() {
			By("Reconciling the created resource")
			controllerReconciler := &MemcachedReconciler{
				Client: k8sClient,
				Scheme: k8sClient.Scheme(),
			}

			_, err := controllerReconciler.Reconcile(ctx, reconcile.Request{
				NamespacedName: typeNamespacedName,
			})
			Expect(err).NotTo(HaveOccurred())

			By("Checking if Deployment was successfully created in the reconciliation")
			found := &appsv1.Deployment{}
			Expect(k8sClient.Get(ctx, typeNamespacedName, found)).To(Succeed())
			Expect(found.Spec.Replicas).To(HaveValue(Equal(int32(1))))

			By("Checking the latest Status Condition added to the Memcached instance")
			Expect(k8sClient.Get(ctx, typeNamespacedName, memcached)).To(Succeed())
			available := meta.FindStatusCondition(memcached.Status.Conditions, typeAvailable)
			Expect(available).NotTo(BeNil())
			Expect(available.Status).To(Equal(metav1.ConditionTrue))
			Expect(available.Message).To(Equal("Deployment for custom resource (test-resource) with 1 replicas created successfully"))
			Expect(meta.IsStatusConditionTrue(memcached.Status.Conditions, "Ready")).To(BeTrue())

			By("Reconciling again: the Memcached and its Deployment are as asked, nothing is written")
			requests.Reset()
			_, err = controllerReconciler.Reconcile(ctx, reconcile.Request{NamespacedName: typeNamespacedName})
			Expect(err).NotTo(HaveOccurred())
			Expect(requests.Writes()).To(Equal(0), "requests: %s", &requests)

			By("the deployment controller writing the Deployment's status: still nothing to write")
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, typeNamespacedName, found)).To(Succeed())
				g.Expect(found.Status.ObservedGeneration).To(Equal(found.Generation))
				g.Expect(found.Status.Replicas).To(Equal(int32(1)))
			}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
			requests.Reset()
			_, err = controllerReconciler.Reconcile(ctx, reconcile.Request{NamespacedName: typeNamespacedName})
			Expect(err).NotTo(HaveOccurred())
			Expect(requests.Writes()).To(Equal(0), "requests: %s", &requests)
		})

		It("keeps what another writer set on the Deployment and follows the size", func() {
			controllerReconciler := &MemcachedReconciler{Client: k8sClient, Scheme: k8sClient.Scheme()}
			_, err := controllerReconciler.Reconcile(ctx, reconcile.Request{NamespacedName: typeNamespacedName})
			Expect(err).NotTo(HaveOccurred())

			By("kubectl rollout restart annotating the Pod template")
			dep := &appsv1.Deployment{}
			Expect(k8sClient.Get(ctx, typeNamespacedName, dep)).To(Succeed())
			restart := client.MergeFrom(dep.DeepCopy())
			dep.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-28T12:00:00Z"}
			Expect(k8sClient.Patch(ctx, dep, restart)).To(Succeed())

			By("resizing the Memcached")
			Expect(k8sClient.Get(ctx, typeNamespacedName, memcached)).To(Succeed())
			memcached.Spec.Size = ptr.To[int32](3)
			Expect(k8sClient.Update(ctx, memcached)).To(Succeed())

			// The deployment controller writes the Deployment meanwhile: an
			// update locked on the resourceVersion read may meet its write
			// (a conflict), which the manager retries, as here.
			Eventually(func() error {
				_, err := controllerReconciler.Reconcile(ctx, reconcile.Request{NamespacedName: typeNamespacedName})
				return err
			}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
			Expect(k8sClient.Get(ctx, typeNamespacedName, dep)).To(Succeed())
			Expect(dep.Spec.Replicas).To(HaveValue(Equal(int32(3))))
			Expect(dep.Spec.Template.Annotations).To(HaveKeyWithValue("kubectl.kubernetes.io/restartedAt", "2026-11-28T12:00:00Z"))

			Expect(k8sClient.Get(ctx, typeNamespacedName, memcached)).To(Succeed())
			Expect(meta.FindStatusCondition(memcached.Status.Conditions, typeAvailable).Message).
				To(Equal("Deployment for custom resource (test-resource) with 3 replicas created successfully"))
		})

		It("converges under the manager, as cmd/main.go runs it", func() {
			mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: k8sClient.Scheme(),
				Metrics: server.Options{BindAddress: "0"},
				// ginkgo -repeat runs the suite again in one process, and
				// controller names must be unique in a process.
				Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
			Expect(err).NotTo(HaveOccurred())
			Expect((&MemcachedReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr)).To(Succeed())
			mgrCtx, stop := context.WithCancel(ctx)
			done := make(chan error)
			go func() { done <- mgr.Start(mgrCtx) }()
			defer func() { stop(); Expect(<-done).To(Succeed()) }()

			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, typeNamespacedName, memcached)).To(Succeed())
				g.Expect(meta.IsStatusConditionTrue(memcached.Status.Conditions, "Ready")).To(BeTrue())
			}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
			Expect(k8sClient.Get(ctx, typeNamespacedName, &appsv1.Deployment{})).To(Succeed())
		})
	})
})
