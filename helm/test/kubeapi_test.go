package helmtest

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// kubeTypes maps the built-in kinds the chart renders to their Kubernetes
// API types.
var kubeTypes = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"networking.k8s.io/v1/Ingress":            func() any { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"monitoring.coreos.com/v1/ServiceMonitor": nil, // CRD: checked by TestScenarios
	"cert-manager.io/v1/Certificate":          nil, // CRD: checked by TestScenarios
	"cert-manager.io/v1/Issuer":               nil, // CRD
}

// TestManifestsMatchKubernetesTypes: every built-in object of every scenario
// decodes strictly into its Kubernetes API type, so a misspelt or misplaced
// field fails here rather than at install time.
func TestManifestsMatchKubernetesTypes(t *testing.T) {
	for _, file := range scenarios(t) {
		t.Run(strings.TrimSuffix(file[strings.LastIndex(file, "/")+1:], "-values.yaml"), func(t *testing.T) {
			t.Parallel()
			checkKubeTypes(t, render(t, []string{file}))
		})
	}
}

// checkKubeTypes decodes every built-in object of r strictly into its
// Kubernetes API type.
func checkKubeTypes(t *testing.T, r release) {
	t.Helper()
	for _, o := range r.objs {
		gvk := fmt.Sprintf("%v/%v", o["apiVersion"], o.kind())
		newObj, known := kubeTypes[gvk]
		if !known {
			t.Errorf("%s %s: kind not covered by this test", gvk, o.name())
			continue
		}
		if newObj == nil {
			continue
		}
		// Re-encode the decoded map as JSON for the API types' JSON tags.
		j, err := yaml.Marshal(map[string]any(o))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(j, newObj()); err != nil {
			t.Errorf("%s %s does not match the Kubernetes API: %v", gvk, o.name(), err)
		}
	}
}
