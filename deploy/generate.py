#!/usr/bin/env python3
"""Generates a docker-compose simulation of N organisations (Python 3 standard library only).

    deploy/generate.py --orgs 3 --dataset diabetes --epsilon 1 --out sim
    docker-compose -f sim/docker-compose.yml run --rm aggregator

writes into OUT:

    docker-compose.yml        N nodes (org-1 … org-N), their one-shot publishers, the aggregator
    shards/org-K.csv          organisation K's private rows (mounted into org-K's containers only)
    shards/aggregator.csv     the aggregating organisation's own training rows
    shards/test.csv           its test rows (the paper's stratified test set)
    config/node.toml          the nodes' shared settings and privacy policy
    config/aggregator.toml    the aggregator's settings (endpoints https://org-K:50051)
    config/schema.toml        the public schema everyone agrees on
    federation/               a development CA and one identity folder per organisation
                              (`dpagg-node certs init`): org-K/ is mounted into org-K's
                              containers only, aggregator/ and public-keys/ into the aggregator's
    report/                   where the aggregator writes report.json and report.html

Every connection is mutual TLS: each organisation has a certificate naming dpagg://org/<id> (and
its compose host name), every release is signed by its node and checked by the aggregator, and
the report is signed (check it with `dpagg-aggregator verify report/report.json --signing-keys
federation/public-keys`). The containers run as the unprivileged user 65532 and a node refuses a
private key other users can read, so each organisation's identity folder is handed to that user
(chown, modes stay 0700/0600): generate.py must run as root for this (on Kubernetes the keys are
Secrets mounted for the pod's user only). --insecure generates the old plain-text simulation
instead.

The split follows Minami et al. 2015, §5.2 and `dpagg-aggregator demo`: a class-stratified test set of the
paper's size (Diabetes 84 pos + 84 neg, Breast Cancer 85 M + 84 B), then the remaining rows shuffled
and dealt evenly over N + 1 organisations (the aggregator is organisation 0); leftover rows are
dropped. Deterministic for a given --seed (Python's Mersenne Twister, so the shards differ from the
Rust demo's for the same seed). Rows are copied byte for byte from data/<dataset>.csv.

Every node's operator publishes one learner at --epsilon before its node serves: a one-shot
`org-K-publish` service runs `dpagg-node publish` on the node's state volume, and `org-K` starts
when it has completed. A release is charged once; publishing the same spec again returns the
stored release, so `up` after `down` (without -v) or a restart charges nothing more. Nodes keep
`allow_remote_publish = false`: the aggregator only reads what operators released.
"""

import argparse
import csv
import io
import os
import random
import shutil
import subprocess
import sys
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (csv, schema, test positives, test negatives), as Bundled::paper_split().
DATASETS = {
    "diabetes": ("diabetes.csv", "diabetes.schema.toml", 84, 84),
    "breast-cancer": ("breast_cancer.csv", "breast_cancer.schema.toml", 85, 84),
}
MIN_ROWS = 10  # fewest training rows per organisation we accept
PORT = 50051


def fail(message):
    print(f"generate.py: {message}", file=sys.stderr)
    sys.exit(2)


def number(text):
    """A float as TOML/YAML text: 1.0 → 1, 0.5 → 0.5, 1e-05 stays."""
    return repr(float(text)).removesuffix(".0")


def toml_float(value):
    """A float as TOML text (always a float: 1.0, 0.5, 1e-05)."""
    return repr(float(value))


def lambda_arg(text):
    """λ: "auto" (a function of n, d, ε and the mechanism, resolved by each node) or a number > 0."""
    if text == "auto":
        return text
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: give auto or a number > 0")
    return number(value)


def lambda_toml(lam):
    return '"auto"' if lam == "auto" else toml_float(lam)


def split(dataset, orgs, seed):
    """Returns (header, test rows, [own rows, org-1 rows, …]) as raw CSV lines."""
    csv_name, schema_name, test_pos, test_neg = DATASETS[dataset]
    with open(os.path.join(REPO, "data", schema_name), "rb") as f:
        label = tomllib.load(f)["label"]
    with open(os.path.join(REPO, "data", csv_name), encoding="utf-8") as f:
        lines = [line.rstrip("\r\n") for line in f if line.strip()]
    header, rows = lines[0], lines[1:]
    column = next(csv.reader([header])).index(label["column"])
    labels = [next(csv.reader(io.StringIO(r)))[column] for r in rows]
    pos = [i for i, v in enumerate(labels) if v == label["positive"]]
    neg = [i for i, v in enumerate(labels) if v == label["negative"]]
    if len(pos) + len(neg) != len(rows):
        fail(f"data/{csv_name}: a label is neither {label['positive']} nor {label['negative']}")
    rng = random.Random(seed)
    rng.shuffle(pos)
    rng.shuffle(neg)
    test = pos[:test_pos] + neg[:test_neg]
    train = pos[test_pos:] + neg[test_neg:]
    rng.shuffle(train)
    per_org = len(train) // (orgs + 1)
    if per_org < MIN_ROWS:
        fail(
            f"{orgs} organisations leave {per_org} training rows each in {dataset} "
            f"({len(train)} rows over {orgs} nodes + the aggregator); use at most "
            f"{len(train) // MIN_ROWS - 1} organisations"
        )
    shards = [
        [rows[i] for i in train[k * per_org : (k + 1) * per_org]] for k in range(orgs + 1)
    ]
    return header, [rows[i] for i in test], shards, per_org


def compose_file(args, command_line):
    """The docker-compose.yml text (paths relative to the file, so it works wherever OUT is)."""
    eps, delta, lam = number(args.epsilon), number(args.delta), args.lambda_
    out = [
        f"# Generated by: {command_line}",
        "# Do not edit by hand: run deploy/generate.py again (see deploy/README.md).",
        "#",
        f"# {args.orgs} organisation nodes org-1 … org-{args.orgs}, each with its own data shard (only",
        "# its own file is mounted) and its own named volume for the SQLite ledger, and one aggregator",
        "# that runs once when every node is healthy and writes ./report/report.{json,html}.",
        "# Images: deploy/build-images.sh (offline) or deploy/Dockerfile.",
        "",
        "services:",
    ]
    health = ["--identity", "/identity"] if not args.insecure else ["--insecure"]
    health_args = "".join(f', "{a}"' for a in health)
    for k in range(1, args.orgs + 1):
        org = f"org-{k}"
        mounts = [
            "      - ./config/node.toml:/config/node.toml:ro",
            "      - ./config/schema.toml:/config/schema.toml:ro",
            f"      - ./shards/{org}.csv:/data/shard.csv:ro",
            f"      - {org}-state:/state",
        ]
        if not args.insecure:
            mounts.append(f"      - ./federation/{org}:/identity:ro")
        out += [
            f"  {org}-publish:  # {org}'s operator releases one learner (charged once to its ledger)",
            "    image: ${DPAGG_NODE_IMAGE:-dpagg-node:latest}",
            f'    command: ["publish", "--mechanism", "{args.mechanism}", "--epsilon", "{eps}", '
            f'"--delta", "{delta}", "--lambda", "{lam}"]',
            "    environment:",
            "      DPAGG_CONFIG: /config/node.toml",
            f"      DPAGG_ORGANISATION_ID: {org}",
            '    restart: "no"',
            "    volumes:",
            *mounts,
            f"  {org}:",
            "    image: ${DPAGG_NODE_IMAGE:-dpagg-node:latest}",
            '    command: ["serve"]',
            "    environment:",
            "      DPAGG_CONFIG: /config/node.toml",
            f"      DPAGG_ORGANISATION_ID: {org}",
            "    restart: unless-stopped",
            "    volumes:",
            *mounts,
            "    depends_on:",
            f"      {org}-publish:",
            "        condition: service_completed_successfully",
            "    healthcheck:  # the gRPC health service; scratch images have no shell",
            f'      test: ["CMD", "/dpagg-node", "health", "--addr", "127.0.0.1:{PORT}", "--timeout", "3"{health_args}]',
            "      interval: 2s",
            "      timeout: 5s",
            "      retries: 30",
        ]
    out += [
        "  aggregator:  # runs once; the report lands in ./report",
        "    image: ${DPAGG_AGGREGATOR_IMAGE:-dpagg-aggregator:latest}",
        '    command: ["run", "--config", "/config/aggregator.toml"]',
        '    restart: "no"',
        "    volumes:",
        "      - ./config/aggregator.toml:/config/aggregator.toml:ro",
        "      - ./config/schema.toml:/config/schema.toml:ro",
        "      - ./shards/aggregator.csv:/data/own.csv:ro",
        "      - ./shards/test.csv:/data/test.csv:ro",
        "      - ./report:/report",
        *(
            []
            if args.insecure
            else [
                "      - ./federation/aggregator:/identity:ro",
                "      - ./federation/public-keys:/public-keys:ro",
            ]
        ),
        "    depends_on:",
    ]
    for k in range(1, args.orgs + 1):
        out += [f"      org-{k}:", "        condition: service_healthy"]
    out += ["", "volumes:"]
    out += [f"  org-{k}-state:" for k in range(1, args.orgs + 1)]
    return "\n".join(out) + "\n"


def node_toml(args):
    transport = (
        "insecure = true                   # plain text (generate.py --insecure)"
        if args.insecure
        else 'identity = "/identity"          # org-K\'s own identity folder: mutual TLS, signed releases'
    )
    return f"""# Settings shared by every simulated node; each container sets DPAGG_ORGANISATION_ID.
# Any key can be overridden per node with a flag or a DPAGG_* environment variable.
{transport}
listen = "0.0.0.0:{PORT}"
data = "/data/shard.csv"          # the node's own shard, the only data file mounted into it
schema = "/config/schema.toml"
state_dir = "/state"              # named volume: releases and the privacy ledger

[policy]
epsilon_total = {toml_float(args.budget)}
delta_total = 1e-5
max_epsilon_per_release = {toml_float(max(args.epsilon, 2.0))}
allow_remote_publish = false      # only the node's operator (org-K-publish) releases learners
"""


def aggregator_toml(args):
    scheme = "http" if args.insecure else "https"
    nodes = ", ".join(f'"{scheme}://org-{k}:{PORT}"' for k in range(1, args.orgs + 1))
    transport = (
        "insecure = true                   # plain text (generate.py --insecure)"
        if args.insecure
        else 'identity = "/identity"          # the aggregator\'s identity folder (mutual TLS, signs the report)\n'
        'signing_keys = "/public-keys"    # the organisations\' public signing keys'
    )
    return f"""# The aggregating organisation (organisation 0 of the split).
{transport}
data = "/data/own.csv"
test_file = "/data/test.csv"
schema = "/config/schema.toml"
out = "/report"
nodes = [{nodes}]

mechanism = "{args.mechanism}"
epsilon = {toml_float(args.epsilon)}
delta = {toml_float(args.delta)}
lambda = {lambda_toml(args.lambda_)}
publish = false                   # nodes refuse remote publishing: read what operators released

max_epsilon = {toml_float(args.epsilon)}
max_delta = {toml_float(max(args.delta, 1e-5))}
min_learners = 1

timeout_ms = 5000
retries = 2
backoff_ms = 200
beta = 3.0
seed = {args.seed}
"""


def federation(args, out):
    """A development CA and identity folders for org-1 … org-N and the aggregator."""
    if not os.access(args.node_binary, os.X_OK):
        fail(
            f"{args.node_binary}: no dpagg-node binary to make certificates with (run "
            "deploy/build-images.sh or `cargo build --release -p dpagg-node` first, or --node-binary)"
        )
    orgs = ",".join([*(f"org-{k}" for k in range(1, args.orgs + 1)), "aggregator"])
    fed = os.path.join(out, "federation")
    done = subprocess.run(
        [args.node_binary, "certs", "init", "--out", fed, "--org", orgs],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        fail(f"dpagg-node certs init failed: {done.stderr.strip()}")
    hand_to_container_user(fed, orgs.split(","))


CONTAINER_UID = 65532  # the images' unprivileged user (deploy/build-images.sh, deploy/Dockerfile)


def hand_to_container_user(fed, orgs):
    """Gives each organisation's identity folder to the containers' user, modes unchanged.

    `certs init` writes folders 0700 and private keys 0600, and a node refuses a key other users
    can read, so the keys cannot simply be made readable for user 65532: it must own them. That
    takes root; without it the containers could not read their keys, so say so now rather than
    when every node fails to start. The CA's folder stays with the caller: no container needs it.
    """
    if os.geteuid() != 0:
        fail(
            f"the containers run as user {CONTAINER_UID} and must own their private keys (a node "
            "refuses a key other users can read); run generate.py as root (sudo) so that it can "
            f"chown {fed}/<org>, or --insecure for a plain-text simulation without keys"
        )
    for org in orgs:
        folder = os.path.join(fed, org)
        for path in [folder, *(os.path.join(folder, f) for f in os.listdir(folder))]:
            os.chown(path, CONTAINER_UID, CONTAINER_UID)


def main():
    p = argparse.ArgumentParser(
        description="Generate a docker-compose simulation of N dpagg organisations.",
        epilog="Then: docker-compose -f OUT/docker-compose.yml run --rm aggregator (see deploy/README.md)",
    )
    p.add_argument("--orgs", type=int, default=3, help="number of node organisations N (default 3)")
    p.add_argument("--dataset", choices=sorted(DATASETS), default="diabetes")
    p.add_argument("--epsilon", type=float, default=1.0, help="ε of every node's release (default 1)")
    p.add_argument("--delta", type=float, default=0.0, help="δ of every release (default 0: ε-DP)")
    p.add_argument(
        "--mechanism",
        default="objective-perturbation",
        help="objective-perturbation (default) or output-perturbation",
    )
    p.add_argument(
        "--lambda",
        dest="lambda_",
        type=lambda_arg,
        default="auto",
        help="regulariser λ: auto (default; a function of n, d, ε and the mechanism) or a number",
    )
    p.add_argument("--budget", type=float, default=10.0, help="each node's total ε (default 10)")
    p.add_argument("--seed", type=int, default=1, help="seed of the data split (default 1)")
    p.add_argument(
        "--insecure",
        action="store_true",
        help="plain text: no certificates, unsigned releases (default: mutual TLS)",
    )
    p.add_argument(
        "--node-binary",
        default=os.path.join(REPO, "target", "release", "dpagg-node"),
        help="dpagg-node, to make the federation's certificates (default: target/release/dpagg-node)",
    )
    p.add_argument(
        "--out",
        default="sim",
        help="output folder (default ./sim); a simulation already there is replaced, except its "
        "report/ (stop it with `down -v` first: its volumes hold ledgers of the old shards)",
    )
    args = p.parse_args()
    if args.orgs < 1:
        fail("--orgs must be at least 1")
    if not (0 < args.epsilon <= args.budget):
        fail(f"--epsilon {args.epsilon} must be > 0 and at most --budget {args.budget}")
    if not 0 <= args.delta <= 1e-5:
        fail("--delta must be in [0, 1e-5] (the nodes' δ budget)")

    header, test, shards, per_org = split(args.dataset, args.orgs, args.seed)
    out = os.path.abspath(args.out)
    existing = os.path.join(out, "docker-compose.yml")
    if os.path.exists(existing):
        with open(existing, encoding="utf-8") as f:
            if not f.readline().startswith("# Generated by: deploy/generate.py"):
                fail(f"{existing} was not written by deploy/generate.py; choose another --out")
    for sub in ("shards", "config"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    for sub in ("shards", "config", "report"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    # The aggregator runs as the images' unprivileged user (65532): let it write its report.
    os.chmod(os.path.join(out, "report"), 0o777)

    def write(rel, text, mode=0o644):
        path = os.path.join(out, rel)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(path, mode)

    write("shards/test.csv", "\n".join([header, *test]) + "\n")
    write("shards/aggregator.csv", "\n".join([header, *shards[0]]) + "\n")
    for k in range(1, args.orgs + 1):
        write(f"shards/org-{k}.csv", "\n".join([header, *shards[k]]) + "\n")
    shutil.copyfile(
        os.path.join(REPO, "data", DATASETS[args.dataset][1]), os.path.join(out, "config/schema.toml")
    )
    os.chmod(os.path.join(out, "config/schema.toml"), 0o644)
    write("config/node.toml", node_toml(args))
    write("config/aggregator.toml", aggregator_toml(args))
    shutil.rmtree(os.path.join(out, "federation"), ignore_errors=True)
    if not args.insecure:
        federation(args, out)
    command_line = (
        f"deploy/generate.py --orgs {args.orgs} --dataset {args.dataset} --epsilon {number(args.epsilon)}"
        f" --delta {number(args.delta)} --mechanism {args.mechanism} --lambda {args.lambda_}"
        f" --budget {number(args.budget)} --seed {args.seed}"
        + (" --insecure" if args.insecure else "")
    )
    write("docker-compose.yml", compose_file(args, command_line))
    print(
        f"{args.out}: {args.orgs} organisations × {per_org} {args.dataset} rows, aggregator "
        f"{per_org} own rows + {len(test)} test rows, ε = {number(args.epsilon)}"
    )
    print(f"run:      docker-compose -f {args.out}/docker-compose.yml run --rm aggregator")
    print(f"report:   {args.out}/report/report.json and report.html")
    print(f"clean up: docker-compose -f {args.out}/docker-compose.yml down -v")


if __name__ == "__main__":
    main()
