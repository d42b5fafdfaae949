"""deploy/kubernetes/ against the Kubernetes schemas (kubernetes-validate, strict: no unknown
fields) for the oldest and newest versions it bundles that we support, then against what seedrl
needs of them: an Indexed Job whose RANK is the completion index and whose WORLD_SIZE matches its
completions and parallelism, MASTER_ADDR naming rank 0 through the headless Service, actors
dialling every rank by that name, TLS and link-secret files from Secrets mounted 0400 at the paths
the flags name, and a kustomization listing every manifest.

Usage: kubernetes_manifests.py DEPLOY_DIR. Exits 77 (skipped) when kubernetes-validate or PyYAML
is missing (scripts/install-deps.sh --test-tools installs them).
"""

from __future__ import annotations

import pathlib
import sys

try:
    import kubernetes_validate
    import yaml
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: {e.name} is not installed (scripts/install-deps.sh --test-tools)")
    sys.exit(77)

VERSIONS = ("1.25.0", "1.37.0")  # Indexed Jobs and the completion-index annotation: 1.24+
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)


def flag(args: list[str], name: str) -> str | None:
    for a in args:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def mounted_secret(pod: dict, container: dict, path: str) -> str | None:
    """The Secret whose volume holds `path`, after checking it is mounted 0400."""
    for m in container.get("volumeMounts", []):
        if path.startswith(m["mountPath"].rstrip("/") + "/"):
            vol = next(v for v in pod["volumes"] if v["name"] == m["name"])
            secret = vol.get("secret")
            check(secret is not None, f"{path} is not from a Secret")
            if secret is not None:
                check(secret.get("defaultMode") == 0o400,
                      f"{path}: Secret {secret['secretName']} mounted "
                      f"{oct(secret.get('defaultMode', 0o644))}, not 0400")
                return secret["secretName"]
    check(False, f"nothing is mounted at {path}")
    return None


def main(deploy: pathlib.Path) -> int:
    files = sorted(p for p in deploy.glob("*.yaml") if p.name != "kustomization.yaml")
    for version in VERSIONS:
        for f in files:
            for doc in yaml.safe_load_all(f.read_text()):
                try:
                    kubernetes_validate.validate(doc, version, strict=True)
                except kubernetes_validate.ValidationError as e:
                    check(False, f"{f.name} against Kubernetes {version}: {e.message}")

    docs = {(d["kind"], d["metadata"]["name"]): d
            for f in files for d in yaml.safe_load_all(f.read_text())}
    kustomization = yaml.safe_load((deploy / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    for f in files:
        check(f.name in listed or f.name.endswith(".example.yaml"),
              f"kustomization.yaml does not list {f.name}")

    service = docs[("Service", "seedrl-learners")]
    check(service["spec"].get("clusterIP") == "None", "the learners' Service is not headless")
    job = docs[("Job", "seedrl-learner")]
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    check(spec.get("completionMode") == "Indexed", "the learner Job is not Indexed")
    check(pod.get("subdomain") == service["metadata"]["name"],
          "the learner pods' subdomain is not the headless Service")
    learner = pod["containers"][0]
    env = {e["name"]: e for e in learner.get("env", [])}
    rank_from = env.get("RANK", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
    check("job-completion-index" in rank_from, "RANK is not the Job's completion index")
    world = int(env["WORLD_SIZE"]["value"])
    check(world == spec["completions"] == spec["parallelism"],
          f"WORLD_SIZE {world}, completions {spec['completions']} and parallelism "
          f"{spec['parallelism']} differ")
    master = f"{job['metadata']['name']}-0.{service['metadata']['name']}"
    check(env["MASTER_ADDR"]["value"] == master, f"MASTER_ADDR is not {master}")
    service_ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    check(int(env["MASTER_PORT"]["value"]) == service_ports.get("bootstrap"),
          "MASTER_PORT is not the Service's bootstrap port")
    args = learner["args"]
    check(args[0] == "learner", "the learner container does not run learner mode")
    port = int(flag(args, "--port") or 0)
    check(port == service_ports.get("actors"), "the learners' --port is not the Service's")
    check(flag(args, "--device") == "cuda", "the learner ranks do not train on the GPU")
    gpus = learner["resources"]["limits"].get("nvidia.com/gpu")
    check(gpus == 1, f"a learner pod asks for {gpus} GPUs, not 1")

    actor_deploy = docs[("Deployment", "seedrl-actor")]
    actor_pod = actor_deploy["spec"]["template"]["spec"]
    actor = actor_pod["containers"][0]
    check(actor["args"][0] == "actor", "the actor container does not run actor mode")
    expected = ",".join(f"{job['metadata']['name']}-{r}.{service['metadata']['name']}:{port}"
                        for r in range(world))
    check(flag(actor["args"], "--learner") == expected,
          f"actors dial {flag(actor['args'], '--learner')}, not every rank: {expected}")

    secrets = {n for (k, n) in docs if k == "Secret"}
    for who, p, c in (("learner", pod, learner), ("actor", actor_pod, actor)):
        for name in ("--tls-cert", "--tls-key", "--tls-ca", "--auth-secret-file"):
            path = flag(c["args"], name)
            check(path is not None, f"the {who} has no {name}")
            if path is not None:
                secret = mounted_secret(p, c, path)
                check(secret in secrets, f"{who}'s {name}: Secret {secret} has no example")
        check(p.get("securityContext", {}).get("runAsNonRoot") is True,
              f"the {who} pods may run as root")

    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"PASS: {len(files)} manifests valid for Kubernetes {', '.join(VERSIONS)}; "
              "ranks, rendezvous, actors and Secrets consistent")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
