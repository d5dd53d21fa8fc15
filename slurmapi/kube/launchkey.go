package kube

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// LaunchKey is the launch key of the job pg: an HMAC of the PodGroup's
// identity (namespace, name, UID) under the server's seed. The server
// never reads a key back (it may create Secrets, not read them): it
// derives the key again to sign attaches, and puts the key's SHA-256 in
// the pods' spec, so a Secret planted under the job's name before the
// job existed is refused by the launchers instead of being used.
func LaunchKey(seed []byte, pg *v1alpha1.PodGroup) string {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte("sluice launch key\n" + pg.Namespace + "\n" + pg.Name + "\n" + string(pg.UID)))
	return hex.EncodeToString(m.Sum(nil))
}

// launchKeySHA256 is what the pods carry to check their key with.
func launchKeySHA256(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// randomSeed is the seed of a factory given none (tests): keys are then
// stable only for the factory's life.
func randomSeed() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}
