"""Rewrites a weight-only int8 ONNX encoder so that its matrix products read int8.

The shipped MiniLM keeps each weight as int8 plus a scale and dequantizes it
inside the graph (``Cast`` then ``Mul``). onnxruntime's optimizer folds those
into float32 weights, so every query streams ~42 MB of float32 through its
matrix products (4.4 ms of a 6 ms query here) and the folded copies cost
~170 MB of RSS; without the optimizer every run dequantizes the whole 47 MB
word-embedding table instead. :func:`rewrite` edits the model's protobuf at
the wire level (no ``onnx`` dependency) so that

* ``MatMul(A, Mul(Cast(W), s))``, ``W`` an int8 ``[K, N]`` initializer with a
  per-column (or single) scale, becomes ``com.microsoft.MatMulNBits`` with
  8-bit weights in blocks of :data:`BLOCK` along ``K`` (the column's scale
  repeated per block, so every weight dequantizes to the same float) at
  accuracy level :data:`ACCURACY`: the activations are quantized to int8 per
  row and block, the products accumulate in int32;
* ``Gather(Mul(Cast(W), s), ids)`` becomes ``Mul(Cast(Gather(W, ids)), s')``
  with ``s'`` the looked-up rows' scales (or ``s`` itself when it is per
  column): the same values, but only the looked-up rows are dequantized.

Anything else is copied byte for byte, so a graph with nothing to rewrite
loads as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ACCURACY", "BLOCK", "VERSION", "rewrite"]

BLOCK = 32  # MatMulNBits block along K: 16 gives cos 0.9999 at +30 % time, 64 cos 0.9997
ACCURACY = 4  # MatMulNBits accuracy level 4: int8 activations, int32 accumulation
VERSION = f"1-b{BLOCK}-a{ACCURACY}"  # changes whenever the rewrite's output would

_FLOAT, _UINT8, _INT8 = 1, 2, 3  # TensorProto.DataType
_ATTR_INT = 2  # AttributeProto.AttributeType.INT
_SUFFIX = "__chronomem_int8"


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("malformed varint")


def _enc_varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # a negative int64 is its two's complement
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@dataclass
class _Field:
    num: int
    wire: int
    value: Any  # int for varints, memoryview for length-delimited, else None
    raw: memoryview  # the whole field, key included, as it was read


def _fields(buf: memoryview) -> list[_Field]:
    if not isinstance(buf, memoryview):  # (a varint where a message belongs)
        raise ValueError("a protobuf field of the wrong wire type")
    out: list[_Field] = []
    pos, end = 0, len(buf)
    while pos < end:
        start = pos
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        value: Any = None
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value = buf[pos:pos + size]
            pos += size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > end:
            raise ValueError("truncated protobuf message")
        out.append(_Field(num, wire, value, buf[start:pos]))
    return out


def _len_key(num: int, size: int) -> bytes:
    return _enc_varint(num << 3 | 2) + _enc_varint(size)


def _len_field(num: int, payload: bytes) -> bytes:
    return _len_key(num, len(payload)) + payload


def _int_field(num: int, value: int) -> bytes:
    return _enc_varint(num << 3) + _enc_varint(value)


def _text(view: memoryview) -> str:
    if not isinstance(view, memoryview):
        raise ValueError("a protobuf field of the wrong wire type")
    return bytes(view).decode("utf-8")


@dataclass
class _Node:  # NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    name: str = ""
    op_type: str = ""
    domain: str = ""
    ints: dict[str, int] = field(default_factory=dict)  # the node's INT attributes
    subgraph: bool = False  # a graph attribute (If, Loop, Scan) whose body may read outer names


def _node(buf: memoryview) -> _Node:
    node = _Node()
    for f in _fields(buf):
        if f.num == 1:
            node.inputs.append(_text(f.value))
        elif f.num == 2:
            node.outputs.append(_text(f.value))
        elif f.num == 3:
            node.name = _text(f.value)
        elif f.num == 4:
            node.op_type = _text(f.value)
        elif f.num == 7:
            node.domain = _text(f.value)
        elif f.num == 5:
            attr = {a.num: a.value for a in _fields(f.value)}  # AttributeProto: name 1, i 3, g 6, graphs 11
            if 1 in attr and isinstance(attr.get(3), int):
                node.ints[_text(attr[1])] = attr[3]
            node.subgraph = node.subgraph or 6 in attr or 11 in attr
    return node


def _encode_node(op_type: str, inputs: list[str], outputs: list[str], name: str, domain: str = "",
                 ints: dict[str, int] | None = None) -> bytes:
    body = b"".join(_len_field(1, s.encode()) for s in inputs)
    body += b"".join(_len_field(2, s.encode()) for s in outputs)
    body += _len_field(3, name.encode()) + _len_field(4, op_type.encode())
    for key, value in (ints or {}).items():
        body += _len_field(5, _len_field(1, key.encode()) + _int_field(3, value) + _int_field(20, _ATTR_INT))
    if domain:
        body += _len_field(7, domain.encode())
    return _len_field(1, body)


@dataclass
class _Tensor:  # TensorProto: dims 1, data_type 2, name 8, raw_data 9
    name: str = ""
    dims: list[int] = field(default_factory=list)
    data_type: int = 0
    raw: memoryview | None = None


def _tensor(buf: memoryview) -> _Tensor:
    t = _Tensor()
    for f in _fields(buf):
        if f.num == 1 and f.wire == 0:
            t.dims.append(f.value)
        elif f.num == 1 and f.wire == 2:  # packed dims
            pos = 0
            while pos < len(f.value):
                dim, pos = _varint(f.value, pos)
                t.dims.append(dim)
        elif f.num == 2:
            t.data_type = f.value
        elif f.num == 8:
            t.name = _text(f.value)
        elif f.num == 9 and f.wire == 2:
            t.raw = f.value
    return t


def _encode_tensor(name: str, dims: list[int], data_type: int, raw: bytes) -> list[bytes]:
    """A GraphProto initializer field as chunks (``raw`` is not copied)."""
    head = b"".join(_int_field(1, d) for d in dims) + _int_field(2, data_type) + _len_field(8, name.encode())
    head += _len_key(9, len(raw))
    return [_len_key(5, len(head) + len(raw)), head, raw]


class _Rewriter:
    def __init__(self, np: Any, graph: memoryview, block: int, accuracy: int) -> None:
        self.np = np
        self.block = block
        self.accuracy = accuracy
        self.fields = _fields(graph)
        self.nodes = {i: _node(f.value) for i, f in enumerate(self.fields) if f.num == 1}
        self.tensor_at = {i: _tensor(f.value) for i, f in enumerate(self.fields) if f.num == 5}  # initializers
        self.tensors = {t.name: t for t in self.tensor_at.values()}
        self.producer = {out: node for node in self.nodes.values() for out in node.outputs}
        # graph inputs and outputs (an initializer that is also an input may be fed at run time)
        self.pinned = {_text(g.value) for f in self.fields if f.num in (11, 12) for g in _fields(f.value) if g.num == 1}
        self.replaced: dict[int, bytes] = {}  # graph field index -> the node(s) replacing it
        self.added: list[bytes] = []  # new initializers, as chunks
        self.reads: set[str] = set()  # what the new nodes read
        self.matched: set[str] = set()  # the int8 weights and scales of rewritten nodes
        self.packed: dict[tuple[str, str], str] = {}  # (weight, scale) -> the name of its packed copy

    def _int8_weight(self, name: str) -> tuple[_Tensor, _Tensor] | None:
        """``(W, s)`` when ``name`` is ``Mul(Cast(W), s)``, ``W`` a raw int8
        2-D initializer and ``s`` a raw float one."""
        mul = self.producer.get(name)
        if mul is None or mul.op_type != "Mul" or mul.domain or len(mul.inputs) != 2:
            return None
        cast = self.producer.get(mul.inputs[0])
        weight = (self.tensors.get(cast.inputs[0])
                  if cast is not None and cast.op_type == "Cast" and len(cast.inputs) == 1 else None)
        scale = self.tensors.get(mul.inputs[1])
        if (cast is None or cast.domain or cast.ints.get("to") != _FLOAT or weight is None or scale is None
                or weight.name in self.pinned or scale.name in self.pinned
                or weight.data_type != _INT8 or len(weight.dims) != 2 or weight.raw is None
                or scale.data_type != _FLOAT or scale.raw is None):
            return None
        return weight, scale

    def _matmul(self, index: int, node: _Node) -> None:
        found = self._int8_weight(node.inputs[1])
        if found is None:
            return
        np = self.np
        weight, scale = found
        k, n = weight.dims
        s = np.frombuffer(scale.raw, dtype="<f4")
        if s.size not in (1, n) or any(d not in (1, n) for d in scale.dims) or (s.size == n and scale.dims[-1:] != [n]):
            return  # not a per-column (or single) scale
        blocks = -(-k // self.block)
        base = self.packed.get((weight.name, scale.name), "")
        if not base:  # (a weight two products share is packed once)
            base = self.packed[weight.name, scale.name] = f"{weight.name}{_SUFFIX}{len(self.packed)}"
            self._pack(weight, s, base, k, n, blocks)
        self.replaced[index] = _encode_node(
            "MatMulNBits", [node.inputs[0], base + "_b", base + "_s"], node.outputs, node.name + _SUFFIX,
            "com.microsoft", {"K": k, "N": n, "bits": 8, "block_size": self.block, "accuracy_level": self.accuracy})
        self.reads.add(node.inputs[0])
        self.matched |= {weight.name, scale.name}

    def _pack(self, weight: _Tensor, s: Any, base: str, k: int, n: int, blocks: int) -> None:
        np = self.np
        w = np.frombuffer(weight.raw, dtype=np.uint8).reshape(k, n) ^ 0x80  # int8 + 128: zero point 128
        packed = np.full((n, blocks * self.block), 0x80, dtype=np.uint8)  # K's padding dequantizes to 0
        packed[:, :k] = w.T
        scales = np.repeat(np.broadcast_to(s, (n,)).astype("<f4"), blocks)
        self.added += _encode_tensor(base + "_b", [n, blocks, self.block], _UINT8, packed.tobytes())
        self.added += _encode_tensor(base + "_s", [n * blocks], _FLOAT, scales.tobytes())

    def _gather(self, index: int, node: _Node) -> None:
        if node.ints.get("axis", 0) != 0 or len(node.inputs) != 2:
            return
        found = self._int8_weight(node.inputs[0])
        if found is None:
            return
        weight, scale = found
        rows, cols = weight.dims
        if scale.dims == [rows, 1] and rows > 1:
            per_row = True
        elif all(d == 1 for d in scale.dims[:-1]) and scale.dims[-1:] in ([cols], [1], []):
            per_row = False
        else:
            return
        out, ids, name = node.outputs[0] + _SUFFIX, node.inputs[1], node.name + _SUFFIX
        nodes = _encode_node("Gather", [weight.name, ids], [out + "_q"], name + "_q", ints={"axis": 0})
        if per_row:
            nodes += _encode_node("Gather", [scale.name, ids], [out + "_s"], name + "_s", ints={"axis": 0})
        nodes += _encode_node("Cast", [out + "_q"], [out + "_f"], name + "_f", ints={"to": _FLOAT})
        nodes += _encode_node("Mul", [out + "_f", out + "_s" if per_row else scale.name], node.outputs, name + "_m")
        self.replaced[index] = nodes
        self.reads |= {weight.name, scale.name, ids}
        self.matched |= {weight.name, scale.name}

    def graph(self) -> list[Any]:
        """The rewritten GraphProto as chunks (bytes or views of the input,
        so that nothing large is copied before the one final join), or
        ``[]`` when nothing matched."""
        for index, node in self.nodes.items():
            if node.domain:
                continue
            if node.op_type == "MatMul" and len(node.inputs) == 2:
                self._matmul(index, node)
            elif node.op_type == "Gather":
                self._gather(index, node)
        if not self.replaced:
            return []
        # Drop what nothing reads any more: the Cast/Mul pairs that fed the
        # rewritten nodes and the float weights they made (a tensor read
        # elsewhere stays, as do graph inputs and outputs).
        # (Not when a node has a subgraph: its body may read any outer name.)
        kept = {i: n for i, n in self.nodes.items() if i not in self.replaced}
        subgraphs = any(n.subgraph for n in self.nodes.values())
        dead: set[int] = set()
        while not subgraphs:
            used = self.pinned | self.reads
            for i, n in kept.items():
                if i not in dead:
                    used.update(n.inputs)
            more = {i for i, n in kept.items() if i not in dead and n.op_type in ("Cast", "Mul")
                    and not any(o in used for o in n.outputs)}
            if not more:
                break
            dead |= more
        used = self.pinned | self.reads | {i for j, n in kept.items() if j not in dead for i in n.inputs}
        gone = {o for i in dead for o in kept[i].outputs}
        out: list[Any] = []
        for index, f in enumerate(self.fields):
            if f.num == 1 and index in self.replaced:
                out.append(self.replaced[index])
            elif f.num == 1 and index in dead:
                continue
            elif f.num == 5 and not subgraphs and self.tensor_at[index].name in self.matched - used:
                continue
            elif f.num == 13 and self._name(f, 1) in gone:
                continue
            else:
                out.append(f.raw)
        return out + self.added

    @staticmethod
    def _name(f: _Field, num: int) -> str:
        return next((_text(g.value) for g in _fields(f.value) if g.num == num), "")


def rewrite(model: bytes, np: Any, *, block: int = BLOCK, accuracy: int = ACCURACY) -> tuple[bytes, int]:
    """``(model bytes, number of nodes rewritten)``. When nothing matches, the
    bytes are ``model`` itself. Raises ``ValueError`` on bytes that are not a
    protobuf message."""
    top = _fields(memoryview(model))
    graphs = [f for f in top if f.num == 7]  # ModelProto.graph
    if len(graphs) != 1:
        return model, 0
    rewriter = _Rewriter(np, graphs[0].value, block, accuracy)
    graph = rewriter.graph()
    if not graph:
        return model, 0
    out: list[Any] = []
    for f in top:
        if f.num == 7:
            out.append(_len_key(7, sum(len(chunk) for chunk in graph)))
            out += graph
        else:
            out.append(f.raw)
    domains = {_text(g.value) for f in top if f.num == 8 for g in _fields(f.value) if g.num == 1}
    if "com.microsoft" not in domains:  # OperatorSetIdProto: domain 1, version 2
        out.append(_len_field(8, _len_field(1, b"com.microsoft") + _int_field(2, 1)))
    return b"".join(out), len(rewriter.replaced)
