package kube

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func demo() Options {
	return Options{Name: "demo", Namespace: "locks", Image: "registry.example/lockcheck:0.1.0", Agents: 3, Port: 7170,
		RunArgs: []string{"--backend", "external", "--redis", "redis.prod:6379", "--lock", "setnx", "--clients", "600"},
		Linger:  "1h0m0s", Token: "TOKEN", RedisPassword: "PASSWORD"}
}

// TestManifests_Golden pins the manifests byte for byte (go test
// ./kube -update rewrites testdata/demo.yaml).
func TestManifests_Golden(t *testing.T) {
	got, err := demo().YAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "demo.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("manifests differ from %s (go test ./kube -update, then review the diff):\n%s", path, got)
	}
}

// TestManifests_DecodeStrictly decodes every document of the golden file
// into its Kubernetes API type, failing on any field the type lacks, and
// checks that the pieces fit: the agents are an Indexed Job of N pods
// that join the coordinator's Service on its port, and every secret key
// a pod reads is in the Secret.
func TestManifests_DecodeStrictly(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	var service corev1.Service
	jobs := map[string]*batchv1.Job{}
	for i, doc := range strings.Split(string(b), "\n---\n") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		var job *batchv1.Job
		switch head.Kind {
		case "Secret":
			obj = &secret
		case "Service":
			obj = &service
		case "Job":
			job = &batchv1.Job{}
			obj = job
		default:
			t.Fatalf("document %d: kind %q", i, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s) does not decode strictly: %v", i, head.Kind, err)
		}
		if job != nil {
			jobs[job.Name] = job
		}
	}
	// A field the types lack fails the decode: the check can fail.
	if err := yaml.UnmarshalStrict([]byte("kind: Secret\nstringDatta: {}\n"), &corev1.Secret{}); err == nil {
		t.Fatal("a misspelt field decoded strictly")
	}
	t.Run("fit", func(t *testing.T) {
		o := demo()
		agents, coord := jobs[o.AgentsJob()], jobs[o.CoordinatorJob()]
		if agents == nil || coord == nil {
			t.Fatalf("jobs %v", jobs)
		}
		if agents.Spec.CompletionMode == nil || *agents.Spec.CompletionMode != batchv1.IndexedCompletion || *agents.Spec.Completions != 3 || *agents.Spec.Parallelism != 3 {
			t.Errorf("agents job: %+v, want Indexed, 3 completions, 3 at once", agents.Spec)
		}
		if p := agents.Spec.BackoffLimitPerIndex; p == nil || *p < 1 || agents.Spec.Template.Spec.RestartPolicy != "Never" {
			t.Errorf("agents job: a killed agent's pod must be recreated under its index (backoffLimitPerIndex, restartPolicy Never)")
		}
		args := strings.Join(agents.Spec.Template.Spec.Containers[0].Args, " ")
		if want := "--join " + service.Name + ":7170"; !strings.Contains(args, want) || service.Spec.Ports[0].Port != 7170 {
			t.Errorf("agent args %q, want %q to the service's port", args, want)
		}
		for k, v := range service.Spec.Selector {
			if coord.Spec.Template.Labels[k] != v {
				t.Errorf("the service selects %s=%s; the coordinator pod has %q", k, v, coord.Spec.Template.Labels[k])
			}
		}
		cargs := strings.Join(coord.Spec.Template.Spec.Containers[0].Args, " ")
		if !strings.Contains(cargs, "--agents 3 --listen :7170") {
			t.Errorf("coordinator args %q", cargs)
		}
		for _, job := range jobs {
			for _, e := range job.Spec.Template.Spec.Containers[0].Env {
				ref := e.ValueFrom.SecretKeyRef
				if ref.Name != secret.Name || secret.StringData[ref.Key] == "" {
					t.Errorf("%s reads %s from secret %s key %s, which is not there", job.Name, e.Name, ref.Name, ref.Key)
				}
				if strings.Contains(strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "), secret.StringData[ref.Key]) {
					t.Errorf("%s has a secret in its argv", job.Name)
				}
			}
		}
	})
}
