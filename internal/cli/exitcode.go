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

// Package cli holds the pure decisions of the kubectl-nsclaim plugin (cmd/kubectl-nsclaim): exit codes,
// default claim names, what a claim's conditions mean for a pipeline and who must act on a refusal, how
// an existing claim of the same name is handled, the TTL an extension asks for, and the kubeconfigs it
// writes. It does no I/O.
package cli

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Exit codes of kubectl-nsclaim. They are part of the plugin's interface (docs/pipelines.md): a
// pipeline branches on them, so they never change meaning.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: any other failure (the API server unreachable, an unexpected answer).
	ExitError = 1
	// ExitUsage: a flag or argument is wrong; nothing was sent to the API server.
	ExitUsage = 2
	// ExitRefused: the operator refused the claim (or it expired): waiting longer will not help; the
	// message names the reason and who must act.
	ExitRefused = 3
	// ExitTimeout: the claim did not become Ready (or go away) within --timeout.
	ExitTimeout = 4
	// ExitForbidden: the API server denied the caller (403: its identity lacks a right of the shipped
	// pipeline role) or did not accept its credentials (401: the token expired or was revoked).
	ExitForbidden = 5
	// ExitNotFound: the claim (or its credentials Secret) does not exist.
	ExitNotFound = 6
	// ExitExists: the claim exists and --if-exists=fail, or it exists with another class, or it is
	// another caller's (the default --if-exists reuses only one's own claim), or a credentials Secret
	// does not belong to the claim.
	ExitExists = 7
	// ExitQueued: --timeout ended while the claim waited for capacity: in a NamespaceBudget's queue
	// (Queued: the budget is full, not the operator slow; the message gives the position), or on a
	// fleet hub for a member cluster that may take it (NoEligibleCluster).
	ExitQueued = 8
)

// RefusedError is a claim the operator will not serve until someone acts.
type RefusedError struct {
	Claim   string
	Reason  string
	Message string
	// ServerVersion is the cluster's Kubernetes version, when known (a fence instruction depends on it).
	ServerVersion string
}

func (e *RefusedError) Error() string {
	g := GuidanceOn(e.Reason, e.ServerVersion)
	return fmt.Sprintf("namespaceclaim %s refused: %s: %s\n  who must act: %s\n  what to do: %s", e.Claim, e.Reason, e.Message, g.Actor, g.Action)
}

// TimeoutError is a wait that ran out; Last describes the claim's state when it did.
type TimeoutError struct {
	What string
	Last string
	// Queued is set when the claim waited in a NamespaceBudget's queue when the wait ran out.
	Queued bool
}

func (e *TimeoutError) Error() string {
	if e.Last == "" {
		return "timed out waiting for " + e.What
	}
	return fmt.Sprintf("timed out waiting for %s; last state: %s", e.What, e.Last)
}

// ExistsError is a claim that exists where the caller asked for a new one.
type ExistsError struct {
	Claim  string
	Detail string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("namespaceclaim %s exists: %s", e.Claim, e.Detail)
}

// NotFoundError is a claim (or its Secret) that does not exist, found without an API error (for
// example a Secret the claim's status does not name yet).
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }

// UsageError is a wrong flag or argument.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ExitCode maps an error returned by a command to the process's exit code: nil is ExitOK; the
// plugin's own error types and the API server's Forbidden and NotFound answers (wrapped or not) have
// their own codes; anything else is ExitError.
func ExitCode(err error) int {
	var (
		refused  *RefusedError
		timeout  *TimeoutError
		exists   *ExistsError
		notFound *NotFoundError
		usage    *UsageError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &refused):
		return ExitRefused
	case errors.As(err, &timeout) && timeout.Queued:
		return ExitQueued
	case errors.As(err, &timeout):
		return ExitTimeout
	case errors.As(err, &exists):
		return ExitExists
	case errors.As(err, &notFound):
		return ExitNotFound
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return ExitForbidden
	case apierrors.IsNotFound(err):
		return ExitNotFound
	}
	return ExitError
}

// UnauthorizedHint is printed after a 401: what it means for a pipeline.
const UnauthorizedHint = "the pipeline identity's token has expired or was revoked: make a new kubeconfig " +
	"(kubectl nsclaim pipeline-identity) and store it as the CI's secret; keyless: check the ID token's audience and the issuer's configuration"

// Message is what the plugin prints for an error: its text, and for a 401 what to do about it.
func Message(err error) string {
	if apierrors.IsUnauthorized(err) {
		return err.Error() + "\n  " + UnauthorizedHint
	}
	return err.Error()
}
