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

// Package claimpolicy holds nsclaim's pure decisions: how a namespace is named, which class and TTL
// apply to a claim, whether a claim may proceed, and what every object it owns should look like. It
// does no I/O.
package claimpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// maxLabelLength is the longest DNS-1123 label, and so the longest namespace name.
	maxLabelLength = validation.DNS1123LabelMaxLength
	// hashLength is the number of hex digits of the SHA-256 suffix added to a name that had to be
	// changed: 40 bits, so distinct long names do not collide by accident.
	hashLength = 10
)

// NamespaceName returns the name of the namespace for a claim: prefix+requested when the claim asks
// for a name, else prefix+claimNamespace+"-"+claimName. The result is always a valid DNS-1123 label of
// at most 63 characters. A candidate that already is one is used as is; any other candidate (too long,
// or with characters a label may not hold) is lower-cased, cleaned, cut short and suffixed with "-" and
// a hash of the whole candidate, so the same input always gives the same name and different inputs give
// different names.
//
// A derived name (no requested name) always carries the hash: claimNamespace+"-"+claimName alone is
// ambiguous ("a-b"+"c" and "a"+"b-c" join alike), the hash of the pair is not.
//
// Every hash is keyed with key, the UID of the claim's namespace, which other requesters cannot read:
// a requester elsewhere cannot compute a derived or shortened name ahead of its owner and claim it
// literally with spec.namespaceName.
func NamespaceName(prefix, requested, claimNamespace, claimName, key string) string {
	if requested != "" {
		name := prefix + requested
		if len(validation.IsDNS1123Label(name)) == 0 {
			return name
		}
		return hashed(name, key+"/"+name)
	}
	return hashed(prefix+claimNamespace+"-"+claimName, key+"/"+claimNamespace+"/"+claimName)
}

// Label turns any string into a valid DNS-1123 label of at most 63 characters. A string that already is
// one is returned unchanged; any other is cleaned, cut short and suffixed with a hash of the input.
func Label(s string) string {
	if len(validation.IsDNS1123Label(s)) == 0 {
		return s
	}
	return hashed(s, s)
}

// hashed returns sanitize(readable), cut so that "-"+hash(key) fits in a label, followed by that suffix.
func hashed(readable, key string) string {
	sum := sha256.Sum256([]byte(key))
	suffix := hex.EncodeToString(sum[:])[:hashLength]
	base := sanitize(readable)
	if max := maxLabelLength - hashLength - 1; len(base) > max {
		base = strings.TrimRight(base[:max], "-")
	}
	if base == "" {
		return "x" + suffix
	}
	return base + "-" + suffix
}

// sanitize lower-cases s, turns every run of characters a label may not hold into one "-", and trims
// "-" from both ends.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}
