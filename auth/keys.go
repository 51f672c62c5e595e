package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// KeyPrefix starts every generated key, so that a leaked one is recognisable.
const KeyPrefix = "tr_"

// Generated is a fresh API key. Its JSON, {"key": …, "entry": {…}}, is what
// "toolrouter keys new" prints: the key, shown once, and its auth.keys entry, which holds only
// the key's SHA-256.
type Generated struct {
	Key   string `json:"key"`
	Entry Key    `json:"entry"`
}

// NewKey returns a random key (KeyPrefix and 32 random bytes, base64url) for id, with its
// auth.keys entry named name (by default the identity's path with '-' for '/').
func NewKey(name string, id Identity) (Generated, error) {
	if !id.Valid() {
		return Generated{}, fmt.Errorf("generating a key: identity %q: want an org, org/team or org/team/agent of valid names", id.String())
	}
	if name == "" {
		name = strings.ReplaceAll(id.String(), "/", "-")
	}
	if !keyName.MatchString(name) {
		return Generated{}, fmt.Errorf("generating a key: name %q: want letters, digits, '_', '.', '@' or '-' (at most 64)", name)
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	key := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(key))
	return Generated{Key: key, Entry: Key{
		Name: name, SHA256: hex.EncodeToString(sum[:]), Org: id.Org, Team: id.Team, Agent: id.Agent,
	}}, nil
}
