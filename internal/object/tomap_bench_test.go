package object

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/steadyk8s/steady/internal/testapi"
)

func benchWidget() *testapi.Widget {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-steady-n1000-w1-l0-r0", Name: "team-0001", UID: "5f1c7c6e-8d1b-4f5e-9d0e-2a6b1c3d4e5f", ResourceVersion: "123456", Generation: 1,
		CreationTimestamp: metav1.Unix(1700000000, 0), Finalizers: []string{"bench.steady.dev/finalizer"}, Labels: map[string]string{"app": "x"}}}
	w.Spec.Size = 3
	w.Status.ObservedGeneration = 1
	w.Status.Conditions = []metav1.Condition{
		{Type: "Ready", Status: "True", Reason: "Succeeded", ObservedGeneration: 1, LastTransitionTime: metav1.Unix(1700000000, 0)},
		{Type: "ChildrenReady", Status: "True", Reason: "Reconciled", ObservedGeneration: 1, LastTransitionTime: metav1.Unix(1700000000, 0)},
	}
	return w
}

// BenchmarkToMap compares the two ways to convert a typed object to a map:
// the converter (what ToMap uses) and a JSON round trip.
func BenchmarkToMap(b *testing.B) {
	w := benchWidget()
	b.Run("ToUnstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("JSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(w)
			if err != nil {
				b.Fatal(err)
			}
			var m map[string]any
			if err := utiljson.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkToMapWithoutManagedFields(b *testing.B) {
	w := benchWidget()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToMapWithoutManagedFields(w); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPod() *corev1.Pod {
	w := benchWidget()
	c := corev1.Container{
		Name: "app", Image: "registry.example/app:v1.2.3", Args: []string{"--port=8080", "--verbose"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: 5},
		VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
	sidecar := c
	sidecar.Name = "sidecar"
	return &corev1.Pod{
		ObjectMeta: w.ObjectMeta,
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{c, sidecar}, ServiceAccountName: "app", NodeName: "node-1",
			Volumes:     []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1", StartTime: &w.CreationTimestamp,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: w.CreationTimestamp}},
		},
	}
}

// BenchmarkToUnstructured compares ToUnstructured's compiled plans with
// apimachinery's converter on the objects steady converts most.
func BenchmarkToUnstructured(b *testing.B) {
	w := benchWidget()
	for _, c := range []struct {
		name string
		obj  any
	}{
		{"WidgetStatus", &w.Status},
		{"ObjectMeta", &w.ObjectMeta},
		{"Widget", w},
		{"Pod", benchPod()},
	} {
		b.Run(c.name+"/apimachinery", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.obj); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/plan", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ToUnstructured(c.obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
