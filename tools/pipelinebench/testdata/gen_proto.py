"""Writes workload.binpb, the FileDescriptorSet of workload.proto (with
google/protobuf/timestamp.proto, --include_imports), with grpcio-tools'
protoc. Run from the repository root with the project's venv
(internal/testenv/pyenv):

    .cache/venv/bin/python tools/pipelinebench/testdata/gen_proto.py

(or /work/main/.cache/venv/bin/python from a worktree).
"""

import os
import sys

import grpc_tools
from grpc_tools import protoc

HERE = os.path.dirname(os.path.abspath(__file__))
WKT = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")

if protoc.main([
    "protoc", "-I", HERE, "-I", WKT, "--include_imports",
    "--descriptor_set_out=" + os.path.join(HERE, "workload.binpb"),
    "workload.proto",
]) != 0:
    sys.exit("protoc failed")
