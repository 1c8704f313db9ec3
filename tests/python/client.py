"""A dpagg.v1 client in Python: what another language sees of an organisation node.

It reads only the contract (proto/dpagg/v1/node.proto, compiled with grpcio-tools by run.sh):
Describe the node, fetch its newest learner, check the learner against the same acceptance rules
the Rust aggregator applies (dimension, finite weights, guarantee within a policy, schema
fingerprint, not seeded, proven), and check that an unknown spec gets a typed NOT_FOUND. It exits
non-zero, with one line on stderr, if anything is off.

Usage: client.py ADDRESS --max-epsilon E --max-delta D
"""

import argparse
import math
import sys

import grpc

from dpagg.v1 import node_pb2, node_pb2_grpc


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address")
    parser.add_argument("--max-epsilon", type=float, required=True)
    parser.add_argument("--max-delta", type=float, required=True)
    args = parser.parse_args()

    with grpc.insecure_channel(args.address) as channel:
        stub = node_pb2_grpc.OrganisationNodeStub(channel)
        try:
            described = stub.Describe(node_pb2.DescribeRequest(), timeout=10)
            learner = stub.GetLearner(node_pb2.GetLearnerRequest(latest=True), timeout=10)
        except grpc.RpcError as e:
            fail(f"{args.address}: {e.code().name}: {e.details()}")
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

    m = learner.metadata
    dim = len(learner.weights)
    if dim != m.dim:
        fail(f"dimension mismatch: {dim} weights, metadata says {m.dim}")
    if not all(math.isfinite(w) for w in learner.weights):
        fail("non-finite weight")
    if not (0 <= m.epsilon <= args.max_epsilon and 0 <= m.delta <= args.max_delta):
        fail(f"over policy: ε = {m.epsilon}, δ = {m.delta}")
    if m.schema_fingerprint != described.schema_fingerprint:
        fail("the learner's schema differs from the node's")
    if m.seeded:
        fail("seeded release: no privacy")
    if m.parameters.get("proven", 1.0) == 0.0:
        fail("unproven guarantee")
    if m.neighbour_relation == node_pb2.NEIGHBOUR_RELATION_UNSPECIFIED:
        fail("no neighbour relation")
    relation = node_pb2.NeighbourRelation.Name(m.neighbour_relation)
    budget = described.budget
    print(
        f"{described.organisation_id}: release {m.release_id} ({m.mechanism}, "
        f"ε = {m.epsilon}, δ = {m.delta}, {relation}), {dim} weights; "
        f"budget spent ε = {budget.epsilon_spent:.6f} of {budget.epsilon_total}; "
        f"mechanisms offered: {', '.join(described.mechanisms)}"
    )


if __name__ == "__main__":
    main()
