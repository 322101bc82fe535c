#!/usr/bin/env python3
"""A Prometheus scrape configuration from ServiceMonitors, resolved as the Prometheus Operator's does.

test-release-rehearsal has no Prometheus Operator (it cannot be built from the module proxy), and
Debian's Prometheus 2.42.0 (./bin) is built without Kubernetes service discovery, so this does both
steps: it takes the ServiceMonitors the API server holds, selects the Services their selector and
namespace selector match, and the addresses of those Services' EndpointSlices on the port named
endpoints[].port (ready endpoints only), as the Prometheus Operator's generated relabelling keeps them,
and writes one scrape job per ServiceMonitor endpoint with its scheme, path, interval, TLS and
authorization, the targets static and labelled namespace, service, pod, job (the Service) and
endpoint (the port), as the Prometheus Operator labels them. Fields it does not translate make it
fail, never silently drop a setting.

Usage: servicemonitor-scrape.py SERVICEMONITORS SERVICES ENDPOINTSLICES TOKEN_FILE > prometheus.yml
  the first three: `kubectl get ... -A -o json` output files; TOKEN_FILE: the file bearerTokenFile
  names in a Prometheus Pod (its ServiceAccount token), here a token of Prometheus' ServiceAccount.
"""
import json
import sys

SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
ENDPOINT_FIELDS = {"port", "path", "scheme", "interval", "scrapeTimeout", "bearerTokenFile", "tlsConfig"}
TLS_FIELDS = {"insecureSkipVerify", "serverName"}


def fail(msg):
    sys.exit(f"servicemonitor-scrape: {msg}")


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def targets(ns_names, selector, port, services, slices):
    """The ready addresses, on the port named port, of the Services selected."""
    out = []
    for svc in services:
        m = svc["metadata"]
        if (ns_names is not None and m["namespace"] not in ns_names) or not matches(selector, m.get("labels", {})):
            continue
        for sl in slices:
            sm = sl["metadata"]
            if sm["namespace"] != m["namespace"] or sm.get("labels", {}).get("kubernetes.io/service-name") != m["name"]:
                continue
            for p in sl.get("ports") or []:
                if p.get("name") != port:
                    continue
                for ep in sl.get("endpoints") or []:
                    if not ep.get("conditions", {}).get("ready", True):
                        continue
                    for addr in ep["addresses"]:
                        out.append({"targets": [f"{addr}:{p['port']}"], "labels": {
                            "namespace": m["namespace"], "service": m["name"], "job": m["name"], "endpoint": port,
                            "pod": ep.get("targetRef", {}).get("name", "")}})
    return out


def scrape_configs(sm, services, slices, token_file):
    meta, spec = sm["metadata"], sm["spec"]
    sel = spec.get("selector", {})
    if set(sel) - {"matchLabels"}:
        fail(f"{meta['name']}: selector {sorted(set(sel) - {'matchLabels'})} is not translated")
    nss = spec.get("namespaceSelector", {})
    if set(nss) - {"any", "matchNames"}:
        fail(f"{meta['name']}: namespaceSelector {sorted(nss)} is not translated")
    namespaces = None if nss.get("any") else (nss.get("matchNames") or [meta["namespace"]])
    out = []
    for i, ep in enumerate(spec.get("endpoints", [])):
        extra = set(ep) - ENDPOINT_FIELDS
        if extra:
            fail(f"{meta['name']}: endpoint {i}: {sorted(extra)} not translated")
        if "port" not in ep:
            fail(f"{meta['name']}: endpoint {i} names no port")
        cfg = {"job_name": f"serviceMonitor/{meta['namespace']}/{meta['name']}/{i}",
               "scheme": ep.get("scheme", "http"), "metrics_path": ep.get("path", "/metrics"),
               "static_configs": targets(namespaces, sel.get("matchLabels", {}), ep["port"], services, slices)}
        if not cfg["static_configs"]:
            fail(f"{meta['name']}: endpoint {i}: no ready endpoint of a selected Service has a port named {ep['port']}")
        for k, p in (("interval", "scrape_interval"), ("scrapeTimeout", "scrape_timeout")):
            if k in ep:
                cfg[p] = ep[k]
        if "bearerTokenFile" in ep:
            if ep["bearerTokenFile"] != SA_TOKEN:
                fail(f"{meta['name']}: bearerTokenFile {ep['bearerTokenFile']} is not the Pod's ServiceAccount token")
            cfg["authorization"] = {"type": "Bearer", "credentials_file": token_file}
        tls = ep.get("tlsConfig", {})
        if set(tls) - TLS_FIELDS:
            fail(f"{meta['name']}: tlsConfig {sorted(set(tls) - TLS_FIELDS)} not translated")
        if tls:
            cfg["tls_config"] = {"insecure_skip_verify": bool(tls.get("insecureSkipVerify"))}
            if "serverName" in tls:
                cfg["tls_config"]["server_name"] = tls["serverName"]
        out.append(cfg)
    return out


def main():
    if len(sys.argv) != 5:
        fail("usage: servicemonitor-scrape.py SERVICEMONITORS SERVICES ENDPOINTSLICES TOKEN_FILE")
    sms, services, slices = (json.load(open(f)).get("items", []) for f in sys.argv[1:4])
    if not sms:
        fail("no ServiceMonitor")
    configs = [c for sm in sms for c in scrape_configs(sm, services, slices, sys.argv[4])]
    # JSON is YAML: Prometheus reads it as its configuration file.
    json.dump({"global": {"scrape_interval": "2s", "scrape_timeout": "2s"}, "scrape_configs": configs}, sys.stdout, indent=1)


main()
