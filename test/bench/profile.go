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

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// heapProfile saves the replica's heap profile (after a GC) as heap-<claims>.pb.gz beside the results
// file, when the manager serves pprof on its metrics endpoint (OPERATOR_ARGS=--metrics-pprof), and
// returns the Go heap in use and the memory the Go runtime holds from the OS, from its metrics, in MiB.
// `go tool pprof -sample_index=inuse_space -top <file>` reads the profile.
func (r *replica) heapProfile(dir string, claims int) (path string, heapMiB, sysMiB float64) {
	if m, err := r.metrics(); err == nil {
		heapMiB = sum(m, "go_memstats_heap_inuse_bytes", nil) / (1 << 20)
		sysMiB = sum(m, "go_memstats_sys_bytes", nil) / (1 << 20)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", r.ports.metrics))
	if err != nil {
		return "", heapMiB, sysMiB
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", heapMiB, sysMiB
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", heapMiB, sysMiB
	}
	path = filepath.Join(dir, fmt.Sprintf("heap-%d.pb.gz", claims))
	if os.WriteFile(path, b, 0o644) != nil {
		return "", heapMiB, sysMiB
	}
	return path, heapMiB, sysMiB
}

// cpuProfile starts a CPU profile of the replica over d, when the manager serves pprof on its metrics
// endpoint (OPERATOR_ARGS=--metrics-pprof), and saves it as cpu-<name>.pb.gz beside the results file;
// the returned function waits for it and gives its path ("" when there is none). `go tool pprof -top
// <file>` reads it.
func (r *replica) cpuProfile(dir, name string, d time.Duration) func() string {
	done := make(chan string, 1)
	go func() {
		path := ""
		defer func() { done <- path }()
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", r.ports.metrics, int(d.Seconds())))
		if err != nil {
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return
		}
		p := filepath.Join(dir, "cpu-"+name+".pb.gz")
		if os.WriteFile(p, b, 0o644) == nil {
			path = p
		}
	}()
	return func() string { return <-done }
}
