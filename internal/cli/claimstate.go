/*
Copyright 2026 The nsclaim Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// StateDirEnv overrides where the plugin remembers the claims "claim" made (default: the user's cache
// directory, nsclaim/claims).
const StateDirEnv = "NSCLAIM_STATE_DIR"

// ClaimRecord is what "claim" remembers of a claim it created: its name (so "release", "kubeconfig"
// and the others find it without NAME, in any CI and on a laptop) and its UID (so a later "claim" of
// the name reuses it as this caller's own; another pipeline cannot write this file).
type ClaimRecord struct {
	Name string
	UID  types.UID
}

// ClaimStatePath is the file that records the claim made from working directory dir against server in
// requester namespace ns, under the state directory base. A job that claims from one directory and
// releases from it finds its own claim; two jobs in two workspaces never read each other's.
func ClaimStatePath(base, dir, server, ns string) string {
	sum := sha256.Sum256([]byte(dir + "\x00" + server + "\x00" + ns))
	return filepath.Join(base, hex.EncodeToString(sum[:])[:32])
}

// String is the record's file content: "NAME UID\n".
func (r ClaimRecord) String() string { return fmt.Sprintf("%s %s\n", r.Name, r.UID) }

// ParseClaimRecord reads a record file's content; a file that is not one is an error.
func ParseClaimRecord(s string) (ClaimRecord, error) {
	name, uid, _ := strings.Cut(strings.TrimSpace(s), " ")
	if len(validation.IsDNS1123Label(name)) > 0 {
		return ClaimRecord{}, fmt.Errorf("not a claim record: %q", quoteShort(s))
	}
	return ClaimRecord{Name: name, UID: types.UID(uid)}, nil
}
