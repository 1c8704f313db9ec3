"""A dpagg.v1 client in Python: what another language sees of an organisation node.

It reads only the contract (proto/dpagg/v1/node.proto, compiled with grpcio-tools by run.sh):
connect with mutual TLS (the federation's CA and a client certificate from `dpagg-node certs`),
Describe the node, fetch its newest learner (trained under an agreed map) and one by its spec
(without), check their Ed25519 signatures by re-encoding each release exactly as the proto
documents (message ReleaseSignature) and verifying it with the organisation's
public key, check the learner against the same acceptance rules the Rust aggregator applies
(dimension, finite weights, guarantee within a policy, schema fingerprint, not seeded, proven, a
proof label it accepts and the one Describe gives the mechanism), and
check that an unknown spec gets a typed NOT_FOUND. It exits non-zero, with one line on stderr, if
anything is off.

Usage: client.py ADDRESS --identity DIR --signing-key ORG.pub --max-epsilon E --max-delta D
"""

import argparse
import hashlib
import math
import os
import struct
import sys

import grpc
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from dpagg.v1 import node_pb2, node_pb2_grpc

DOMAIN = "dpagg.v1.ReleaseSignature/1"


def canonical_release(organisation_id: str, learner) -> bytes:
    """The signed bytes of a release, as node.proto documents them (ReleaseSignature)."""
    out = bytearray()

    def u64(v):
        out.extend(struct.pack(">Q", v))

    def f64(v):
        out.extend(struct.pack(">d", v))

    def scalar(v):
        # -0.0 is written as +0.0 except in the weights: proto3 drops a field or map value equal
        # to its default, so a -0 there arrives as +0 (packed weights keep it).
        f64(0.0 if v == 0 else v)

    def text(s):
        b = s.encode("utf-8")
        u64(len(b))
        out.extend(b)

    def boolean(v):
        out.append(1 if v else 0)

    def mapping(m):
        u64(len(m))
        for k in sorted(m, key=lambda k: k.encode("utf-8")):
            text(k)
            scalar(m[k])

    m = learner.metadata
    text(DOMAIN)
    text(organisation_id)
    u64(len(learner.weights))
    for w in learner.weights:
        f64(w)
    text(m.release_id)
    out.extend(struct.pack(">q", m.created_unix_ms))
    text(m.created_at)
    text(m.mechanism)
    text(m.reference)
    mapping(m.parameters)
    scalar(m.epsilon)
    scalar(m.delta)
    out.extend(struct.pack(">i", m.neighbour_relation))
    scalar(m.max_row_norm)
    scalar(m.loss_gradient_bound)
    scalar(m.loss_hessian_bound)
    text(m.schema_fingerprint)
    boolean(m.seeded)
    u64(m.n)
    out.extend(struct.pack(">I", m.dim))
    if m.HasField("spec"):
        out.append(1)
        text(m.spec.mechanism)
        scalar(m.spec.epsilon)
        scalar(m.spec.delta)
        scalar(getattr(m.spec, "lambda"))
        mapping(m.spec.options)
        boolean(m.spec.lambda_auto)
        if m.spec.HasField("map"):
            agreed = m.spec.map
            out.append(1)
            text(agreed.schema_fingerprint)
            text(agreed.source)
            scalar(agreed.row_scale)
            scalar(agreed.intercept_value)
            u64(len(agreed.features))
            for f in agreed.features:
                text(f.name)
                text(f.transform)
                if f.HasField("unit"):
                    out.append(1)
                    f64(f.unit)
                else:
                    out.append(0)
                scalar(f.center)
                scalar(f.scale)
            out.extend(struct.pack(">I", agreed.components))
            u64(len(agreed.directions))
            for v in agreed.directions:
                f64(v)
    else:
        out.append(0)
    out.append(0 if not m.HasField("proven") else (2 if m.proven else 1))
    if m.HasField("proof"):
        out.append(1)
        text(m.proof)
    return bytes(out)


def check_signature(organisation_id: str, learner, public_hex: str) -> str:
    """Verifies the learner's signature with the organisation's key; returns the key id."""
    public = bytes.fromhex(public_hex.strip())
    key_id = hashlib.sha256(public).hexdigest()[:32]
    sig = learner.signature
    if not learner.HasField("signature"):
        fail("the learner is not signed")
    if sig.algorithm != "ed25519" or sig.organisation_id != organisation_id:
        fail(f"signature by {sig.organisation_id!r} ({sig.algorithm}), expected {organisation_id!r}")
    if sig.key_id != key_id:
        fail(f"signed with key {sig.key_id}, trusted key is {key_id}")
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(
            sig.signature, canonical_release(organisation_id, learner)
        )
    except InvalidSignature:
        fail("the signature does not match the release")
    return key_id


def check_data_signature(organisation_id: str, release, public_hex: str):
    """Verifies a data release: the signature covers the body's bytes as received (no
    re-encoding), framed as in DataRelease's comment in the proto; returns the decoded body."""
    public = bytes.fromhex(public_hex.strip())
    sig = release.signature
    if not release.HasField("signature"):
        fail("the data release is not signed")
    if sig.algorithm != "ed25519" or sig.organisation_id != organisation_id:
        fail(f"data signature by {sig.organisation_id!r} ({sig.algorithm})")
    if sig.key_id != hashlib.sha256(public).hexdigest()[:32]:
        fail(f"data release signed with key {sig.key_id}")
    message = b"".join(
        struct.pack(">Q", len(part)) + part
        for part in (b"dpagg.v1.DataRelease/1", organisation_id.encode(), release.body)
    )
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(sig.signature, message)
    except InvalidSignature:
        fail("the signature does not match the data release")
    body = node_pb2.DataReleaseBody()
    body.ParseFromString(release.body)
    return body


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address")
    parser.add_argument("--identity", required=True, help="identity folder (ca.pem, cert.pem, key.pem)")
    parser.add_argument("--signing-key", required=True, help="the organisation's public key (.pub)")
    parser.add_argument("--max-epsilon", type=float, required=True)
    parser.add_argument("--max-delta", type=float, required=True)
    args = parser.parse_args()

    def read(name):
        with open(os.path.join(args.identity, name), "rb") as f:
            return f.read()

    credentials = grpc.ssl_channel_credentials(
        root_certificates=read("ca.pem"), private_key=read("key.pem"), certificate_chain=read("cert.pem")
    )
    with open(args.signing_key, encoding="ascii") as f:
        public_hex = f.read()
    with grpc.secure_channel(args.address, credentials) as channel:
        stub = node_pb2_grpc.OrganisationNodeStub(channel)
        try:
            described = stub.Describe(node_pb2.DescribeRequest(), timeout=10)
            learner = stub.GetLearner(node_pb2.GetLearnerRequest(latest=True), timeout=10)
            plain = stub.GetLearner(
                node_pb2.GetLearnerRequest(
                    spec=node_pb2.LearnerSpec(
                        mechanism="objective-perturbation", epsilon=1.0, lambda_auto=True
                    )
                ),
                timeout=10,
            )
        except grpc.RpcError as e:
            fail(f"{args.address}: {e.code().name}: {e.details()}")
        data = stub.GetData(
            node_pb2.GetDataRequest(
                spec=node_pb2.DataSpec(kind="histogram", epsilon=0.5, options={"bins": 4.0})
            ),
            timeout=10,
        )
        # A typed status for a spec the node never published.
        try:
            stub.GetLearner(
                node_pb2.GetLearnerRequest(
                    # `lambda` is a Python keyword, hence the dictionary.
                    spec=node_pb2.LearnerSpec(
                        mechanism="output-perturbation", epsilon=0.123, **{"lambda": 0.01}
                    )
                ),
                timeout=10,
            )
            fail("expected NOT_FOUND for a spec that was never published")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.NOT_FOUND:
                fail(f"expected NOT_FOUND, got {e.code().name}")

    key_id = check_signature(described.organisation_id, learner, public_hex)
    check_signature(described.organisation_id, plain, public_hex)
    if plain.metadata.schema_fingerprint != described.schema_fingerprint:
        fail("the learner without a map was trained under another schema than the node's")
    m = learner.metadata
    dim = len(learner.weights)
    if dim != m.dim:
        fail(f"dimension mismatch: {dim} weights, metadata says {m.dim}")
    if not all(math.isfinite(w) for w in learner.weights):
        fail("non-finite weight")
    if not (0 <= m.epsilon <= args.max_epsilon and 0 <= m.delta <= args.max_delta):
        fail(f"over policy: ε = {m.epsilon}, δ = {m.delta}")
    if m.spec.HasField("map"):
        # Trained under an agreed map: made for the node's schema, and the learner's schema is
        # the node's with the map applied (its own fingerprint and k + 1 columns).
        agreed = m.spec.map
        if agreed.schema_fingerprint != described.schema_fingerprint:
            fail("the learner's agreed map was made for another schema than the node's")
        columns = agreed.components or len(agreed.features)
        if dim != columns + 1:
            fail(f"{dim} weights under an agreed map of {columns} columns plus the intercept")
    elif m.schema_fingerprint != described.schema_fingerprint:
        fail("the learner's schema differs from the node's")
    if m.seeded:
        fail("seeded release: no privacy")
    if m.parameters.get("proven", 1.0) == 0.0:
        fail("unproven guarantee")
    if m.proof not in ("noise-as-sampled", "real-arithmetic"):
        fail(f"proof label {m.proof!r}: this client accepts noise-as-sampled and real-arithmetic")
    if described.mechanism_proofs.get(m.spec.mechanism) != m.proof:
        fail("the release's proof label differs from the one Describe gives its mechanism")
    if m.neighbour_relation == node_pb2.NEIGHBOUR_RELATION_UNSPECIFIED:
        fail("no neighbour relation")
    body = check_data_signature(described.organisation_id, data, public_hex)
    if body.WhichOneof("payload") != "histograms" or len(body.histograms.features) != len(body.features):
        fail("the histogram release does not have one histogram per feature")
    if body.schema_fingerprint != described.schema_fingerprint or body.seeded:
        fail("the histogram release is of another schema, or seeded")
    bins = {len(h.positive) for h in body.histograms.features}
    if bins != {4}:
        fail(f"expected 4 bins per histogram, got {bins}")
    relation = node_pb2.NeighbourRelation.Name(m.neighbour_relation)
    budget = described.budget
    print(
        f"{described.organisation_id}: release {m.release_id} ({m.mechanism}, "
        f"ε = {m.epsilon}, δ = {m.delta}, {relation}), {dim} weights, signed (key {key_id}); "
        f"budget spent ε = {budget.epsilon_spent:.6f} of {budget.epsilon_total}; "
        f"mechanisms offered: {', '.join(described.mechanisms)}"
    )
    print(
        f"{described.organisation_id}: data release {body.release_id} ({body.mechanism}, "
        f"ε = {body.epsilon}, δ = {body.delta}), {len(body.features)} histograms, signed"
    )


if __name__ == "__main__":
    main()
