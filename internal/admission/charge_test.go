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

package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// cpuUnder is a ChargeCheck that admits while the counted charges plus want stay within limit CPUs.
func cpuUnder(limit, want int64) ChargeCheck {
	return func(counted []Charged) bool {
		sum := want
		for _, c := range counted {
			q := c.Charge.Resources[corev1.ResourceRequestsCPU]
			sum += q.Value()
		}
		return sum <= limit
	}
}

func cpus(n int64) Charge {
	return Charge{Requester: "team-a", Resources: corev1.ResourceList{corev1.ResourceRequestsCPU: *resource.NewQuantity(n, resource.DecimalSI)}}
}

// TestBudgetKeys: a budget key's slots carry charges (seeded ones too, from the live list), the check
// sees them, a held namespace stays charged until GoneFromBudgets names it, and a claim counted already
// is admitted without a check.
func TestBudgetKeys(t *testing.T) {
	var l Ledger
	ctx := context.Background()
	key := Key{Budget: "payments"}
	live := lister(Holding{Claim: "a", Namespace: "ns-a", Charge: cpus(2)})
	r, err := l.AdmitCharged(ctx, key, "b", cpus(2), cpuUnder(3, 2), live)
	if err != nil || r != nil {
		t.Fatalf("b (2 CPUs) beside a seeded holding of 2 in a budget of 3: %v, %v; want refused", r, err)
	}
	if r, err = l.AdmitCharged(ctx, key, "c", cpus(1), cpuUnder(3, 1), live); err != nil || r == nil {
		t.Fatalf("c (1 CPU) was refused: %v", err)
	}
	r.Hold("ns-c")
	got := l.Charges(key)
	if len(got) != 2 || got[1].Claim != "c" || got[1].Charge.Requester != "team-a" {
		t.Fatalf("charges %v, want a and c", got)
	}
	never := func([]Charged) bool { t.Fatal("a counted claim was checked again"); return false }
	if again, err := l.AdmitCharged(ctx, key, "c", cpus(1), never, live); err != nil || again == nil {
		t.Fatalf("a counted claim was not admitted again: %v", err)
	}
	if freed := l.GoneFromBudgets("c", "other"); len(freed) != 0 {
		t.Fatalf("another namespace freed %v", freed)
	}
	if freed := l.GoneFromBudgets(types.UID("c"), "ns-c"); len(freed) != 1 || freed[0] != "payments" {
		t.Fatalf("freed %v, want [payments]", freed)
	}
	if got := l.Charges(key); len(got) != 1 || got[0].Claim != "a" {
		t.Fatalf("charges %v after c's namespace went, want a", got)
	}
}
