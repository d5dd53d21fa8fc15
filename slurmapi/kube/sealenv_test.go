package kube

import (
	"bytes"
	"encoding/base64"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
)

var sealSeed = bytes.Repeat([]byte("s"), 32)

// A sealed environment opens with the same seed for the same namespace and
// user, and with nothing else.
func TestSealEnvironmentRoundTrip(t *testing.T) {
	env := map[string]string{"SECRET_TOKEN": "s3cr3t-value", "BASH_FUNC_module%%": "() {  eval x\n}", "EMPTY": ""}
	sealed, err := sealEnvironment(sealSeed, "slurm-nlp", "alice", env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "s3cr3t") {
		t.Fatal("the sealed environment shows a value")
	}
	got, err := openEnvironment(sealSeed, "slurm-nlp", "alice", sealed)
	if err != nil || !maps.Equal(got, env) {
		t.Fatalf("opened %v, %v; want %v", got, err, env)
	}
	again, _ := sealEnvironment(sealSeed, "slurm-nlp", "alice", env)
	if again == sealed {
		t.Error("two seals of one environment are alike: the nonce is not random")
	}
	raw, _ := base64.StdEncoding.DecodeString(sealed)
	raw[len(raw)-1] ^= 1
	for name, tc := range map[string]struct {
		seed            []byte
		namespace, user string
		sealed          string
	}{
		"another user":      {sealSeed, "slurm-nlp", "bob", sealed},
		"another namespace": {sealSeed, "slurm-vision", "alice", sealed},
		"another seed":      {bytes.Repeat([]byte("r"), 32), "slurm-nlp", "alice", sealed},
		"altered":           {sealSeed, "slurm-nlp", "alice", base64.StdEncoding.EncodeToString(raw)},
		"not base64":        {sealSeed, "slurm-nlp", "alice", "!!"},
		"too short":         {sealSeed, "slurm-nlp", "alice", "AAAA"},
	} {
		got, err := openEnvironment(tc.seed, tc.namespace, tc.user, tc.sealed)
		if !errors.Is(err, errEnvironmentSealed) || got != nil {
			t.Errorf("%s: opened %v, %v; want errEnvironmentSealed", name, got, err)
		}
	}
	if msg := errEnvironmentSealed.Error(); !strings.Contains(msg, "token key") {
		t.Errorf("the refusal %q does not name the cause", msg)
	}
}

// At submit the PodGroup keeps only what Sluice reads in plain; the rest is
// sealed, and tokens are dropped: SLURM_JWT and any value that is a token
// of the server's key, not one that merely looks like a JWT.
func TestSealPodGroupEnvironment(t *testing.T) {
	tokenKey := bytes.Repeat([]byte("k"), 32)
	tok, err := slurmapi.MintToken(tokenKey, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	lookalike := "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJhIn0.bm90LWEtc2lnbmF0dXJl"
	pg := &v1alpha1.PodGroup{}
	pg.Namespace = "slurm-nlp"
	pg.Spec.Slurm = &v1alpha1.SlurmJob{User: "alice", Environment: map[string]string{
		"PATH": "/bin", "SECRET_TOKEN": "s3cr3t-value", "SLURM_JWT": tok, "MY_TOKEN": tok, "LOOKS_LIKE_JWT": lookalike,
		SimDurationEnv: "2s", SimExitCodeEnv: "3", "SLURM_PRIO_PROCESS": "5",
	}}
	if err := sealPodGroupEnvironment(pg, sealSeed, func(v string) bool { return slurmapi.IssuedToken(tokenKey, v) }); err != nil {
		t.Fatal(err)
	}
	s := pg.Spec.Slurm
	if want := map[string]string{SimDurationEnv: "2s", SimExitCodeEnv: "3", "SLURM_PRIO_PROCESS": "5"}; !maps.Equal(s.Environment, want) {
		t.Errorf("environment %v, want only %v", s.Environment, want)
	}
	own, err := openPodGroupEnvironment(pg, sealSeed)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"PATH": "/bin", "SECRET_TOKEN": "s3cr3t-value", "LOOKS_LIKE_JWT": lookalike}; !maps.Equal(own, want) {
		t.Errorf("sealed %v, want %v", own, want)
	}

	// Nothing to seal, nothing stored.
	pg.Spec.Slurm.Environment, pg.Spec.Slurm.SealedEnvironment = map[string]string{"SLURM_JWT": tok}, ""
	if err := sealPodGroupEnvironment(pg, sealSeed, nil); err != nil || pg.Spec.Slurm.Environment != nil || pg.Spec.Slurm.SealedEnvironment != "" {
		t.Errorf("a token alone left environment %v, sealed %q (%v)", pg.Spec.Slurm.Environment, pg.Spec.Slurm.SealedEnvironment, err)
	}
}
