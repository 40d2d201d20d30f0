// Package kube writes the Kubernetes manifests of a run on many
// machines: a coordinator Job and its Service, an Indexed Job of agents,
// and a Secret for what they share. It builds them from the Kubernetes
// API types (k8s.io/api), so that what it prints is what the API server
// reads.
package kube

import (
	"bytes"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Options are one run's manifests.
type Options struct {
	// Name names every object (lockcheck-<Name>-...).
	Name      string
	Namespace string
	// Image holds the lockcheck binary at /usr/bin/lockcheck (lockcheck
	// image builds one).
	Image string
	// Agents is the agent pods' count; Port the coordinator's.
	Agents int
	Port   int
	// RunArgs are the coordinator's lockcheck run flags, without
	// --agents, --listen and --out, which the manifests set.
	RunArgs []string
	// Linger keeps the coordinator's pod up after the run, for kubectl cp
	// of its results (a duration, as lockcheck run --linger takes).
	Linger string
	// Token is the agents' token; RedisPassword the external Redis's
	// (empty: none). Both go into the Secret only.
	Token, RedisPassword string
}

// Secret keys.
const (
	TokenKey    = "agent-token"
	PasswordKey = "redis-password"
	resultsDir  = "/results"
	binary      = "/usr/bin/lockcheck"
)

// Names of the objects.
func (o Options) secretName() string  { return "lockcheck-" + o.Name }
func (o Options) serviceName() string { return "lockcheck-" + o.Name + "-coordinator" }

// CoordinatorJob is the coordinator Job's name: kubectl wait and logs
// take it.
func (o Options) CoordinatorJob() string { return "lockcheck-" + o.Name + "-coordinator" }

// AgentsJob is the agents' Indexed Job's name.
func (o Options) AgentsJob() string { return "lockcheck-" + o.Name + "-agents" }

// JoinAddr is where agents find the coordinator: its Service.
func (o Options) JoinAddr() string { return o.serviceName() + ":" + strconv.Itoa(o.Port) }

func (o Options) labels(role string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "lockcheck", "lockcheck.run": o.Name, "lockcheck.role": role}
}

func (o Options) meta(name, role string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: o.labels(role)}
}

func (o Options) secretEnv(name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: o.secretName()}, Key: key, Optional: &optional}}}
}

// Objects returns the manifests' objects, in the order to apply them.
func (o Options) Objects() []any {
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: o.meta(o.secretName(), "secret"),
		Type: corev1.SecretTypeOpaque, StringData: map[string]string{TokenKey: o.Token}}
	if o.RedisPassword != "" {
		secret.StringData[PasswordKey] = o.RedisPassword
	}
	service := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: o.meta(o.serviceName(), "coordinator"),
		Spec: corev1.ServiceSpec{Selector: o.labels("coordinator"), Ports: []corev1.ServicePort{{Name: "agents", Port: int32(o.Port),
			TargetPort: intstr.FromInt32(int32(o.Port)), Protocol: corev1.ProtocolTCP}}}}
	args := append([]string{"run"}, o.RunArgs...)
	args = append(args, "--agents", strconv.Itoa(o.Agents), "--listen", ":"+strconv.Itoa(o.Port), "--out", resultsDir, "--linger", o.Linger, "-q")
	coordinator := o.job(o.CoordinatorJob(), "coordinator", 1, corev1.Container{Name: "coordinator", Image: o.Image, Command: []string{binary}, Args: args,
		Env:          []corev1.EnvVar{o.secretEnv("LOCKCHECK_AGENT_TOKEN", TokenKey, false), o.secretEnv("LOCKCHECK_REDIS_PASSWORD", PasswordKey, true)},
		Ports:        []corev1.ContainerPort{{Name: "agents", ContainerPort: int32(o.Port), Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: resultsDir}}})
	coordinator.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "results", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	agents := o.job(o.AgentsJob(), "agent", int32(o.Agents), corev1.Container{Name: "agent", Image: o.Image, Command: []string{binary},
		// The index comes from JOB_COMPLETION_INDEX, which an Indexed
		// Job sets in every pod.
		Args: []string{"agent", "--join", o.JoinAddr(), "--join-timeout", "10m"},
		Env:  []corev1.EnvVar{o.secretEnv("LOCKCHECK_AGENT_TOKEN", TokenKey, false)}})
	indexed := batchv1.IndexedCompletion
	agents.Spec.CompletionMode = &indexed
	// A failed agent pod (kill-agent has it SIGKILL itself, as a
	// crashed host) is recreated under its index, and rejoins.
	perIndex := int32(5)
	agents.Spec.BackoffLimit, agents.Spec.BackoffLimitPerIndex = nil, &perIndex
	return []any{secret, service, coordinator, agents}
}

// job is a Job of n pods of c that are not restarted in place: a
// coordinator that failed is not retried (the agents' Job recreates a
// failed agent pod instead: Objects).
func (o Options) job(name, role string, n int32, c corev1.Container) *batchv1.Job {
	backoff := int32(0)
	nonRoot := true
	uid := int64(65532)
	c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: &nonRoot, RunAsUser: &uid}
	return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: o.meta(name, role),
		Spec: batchv1.JobSpec{Completions: &n, Parallelism: &n, BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: o.labels(role)},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c}}}}}
}

// YAML is the manifests as one YAML stream.
func (o Options) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range o.Objects() {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
