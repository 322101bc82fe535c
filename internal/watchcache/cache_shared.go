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

package watchcache

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// sharedTable hands out one shared copy of equal values, so that the informer caches hold each
// repeated string or label set once instead of once per object. unique.Make cannot serve here: its
// entries are weak, and the cached objects keep the interned bytes but not the handle, so every entry
// lapses at the next GC and the next object decoded gets a copy of its own again.
//
// The table is bounded: it keeps two generations of at most limit entries each. When the current one
// is full it becomes the previous one and the one before is dropped; a value found in the previous
// generation moves to the current one. So values still in use stay shared, values of objects long
// deleted (a claim's name, UID, namespace) are forgotten, and the table never holds more than 2*limit
// entries. A forgotten value is not lost: objects that hold it keep their copy; only later objects no
// longer share it.
type sharedTable[V any] struct {
	mu          sync.Mutex
	limit       int
	cur, before map[string]V
}

func newSharedTable[V any](limit int) *sharedTable[V] {
	return &sharedTable[V]{limit: limit, cur: make(map[string]V)}
}

// share returns the value stored under key, storing v under it first if there is none.
func (t *sharedTable[V]) share(key string, v V) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if got, ok := t.cur[key]; ok {
		return got
	}
	if got, ok := t.before[key]; ok {
		v = got
	}
	if len(t.cur) >= t.limit {
		t.before, t.cur = t.cur, make(map[string]V, t.limit)
	}
	t.cur[key] = v
	return v
}

// len is the number of entries in both generations.
func (t *sharedTable[V]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cur) + len(t.before)
}

// sharedLimit bounds each generation of the tables below: enough for the strings and label sets of
// ten thousand claims to stay shared. Full, the string table's own overhead is about 6 MB (the strings
// themselves are the cached objects'); the label table's, with its keys, about 30 MB.
const sharedLimit = 1 << 16

var (
	sharedStrings = newSharedTable[string](sharedLimit)
	sharedLabels  = newSharedTable[map[string]string](sharedLimit)
)

// intern returns a shared copy of s.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return sharedStrings.share(s, s)
}

// shareLabels returns a map equal to m that every object with the same labels shares. The returned
// map must never be written: the caches hand out deep copies, and the transform builds new maps.
func shareLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return sharedLabels.share(labelsKey(m), m)
}

// labelsKey is a canonical encoding of m: equal maps, and only they, have equal keys (each key and
// value is length-prefixed, so no choice of content makes two maps collide).
func labelsKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		v := m[k]
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// holdsValue reports whether some value of m is v.
func holdsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}
