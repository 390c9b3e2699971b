"""ListOps: nested list operations over digits, as a seeded generator and as a reader of LRA's TSV files.

An expression is a digit ``0``..``9`` or an operator applied to a list: ``[MIN``, ``[MAX``, ``[MED``, ``[SM`` followed
by its arguments and a closing ``]``, e.g. ``[MAX 2 9 [MIN 4 7 ] 0 ]`` (value 9). MIN and MAX as usual; MED is the
median; SM is the sum mod 10 (papers/NOTES.md, "Data formats"; PCT paper D.1). The value is computed exactly by
:func:`evaluate_listops`.

Token vocabulary (16 ids, fixed): ``0`` padding; digits ``0``..``9`` -> ids ``1``..``10``; ``[MIN`` 11, ``[MAX`` 12,
``[MED`` 13, ``[SM`` 14, ``]`` 15 (:data:`LISTOPS_VOCAB`).

LRA's release (``listops-1000/basic_{train,val,test}.tsv``) writes each expression with the parentheses of its
binary-tree form, ``( ( ( [MAX 2 ) 9 ) ] )``, under a header ``Source\\tTarget``; LRA's tokenizer drops the
parentheses, and so does :func:`lra_listops`.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from cnet.data._common import (
    check_count,
    check_int,
    check_seed,
    check_split,
    generate,
    local_dir,
    to_dataset,
)
from cnet.data.sources import not_found_error

__all__ = ["LISTOPS_OPERATORS", "LISTOPS_PAD", "LISTOPS_VOCAB", "LRA_LISTOPS_DIR", "evaluate_listops",
           "listops", "listops_ids", "lra_listops", "lra_listops_string", "write_listops_tsv"]

LISTOPS_OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
LISTOPS_CLOSE = "]"
LISTOPS_PAD = 0
LISTOPS_VOCAB: dict[str, int] = {str(d): d + 1 for d in range(10)}
LISTOPS_VOCAB.update({op: 11 + i for i, op in enumerate(LISTOPS_OPERATORS)})
LISTOPS_VOCAB[LISTOPS_CLOSE] = 15
LRA_LISTOPS_DIR = "listops-1000"
_LRA_FILES = {"train": "basic_train.tsv", "validation": "basic_val.tsv", "test": "basic_test.tsv"}
_LEAF_PROBABILITY = 0.75


def _apply(op: str, values: list[int]) -> int:
    if op == "[MIN":
        return min(values)
    if op == "[MAX":
        return max(values)
    if op == "[SM":
        return sum(values) % 10
    ordered = sorted(values)  # [MED
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) // 2


def evaluate_listops(tokens: str | Sequence[str]) -> int:
    """The exact value (0..9) of a ListOps expression.

    MIN, MAX: smallest / largest argument. SM: sum of the arguments mod 10. MED: the median; for an even number
    of arguments, the mean of the two middle values rounded down, ``(a + b) // 2`` (what LRA's generator computes
    with ``int(np.median(...))``; e.g. ``[MED 1 2 ]`` is 1, ``[MED 3 8 1 6 ]`` is 4).

    Args:
        tokens: the expression as a whitespace-separated string or a token list; parentheses (LRA's form) are
            ignored.

    Returns:
        The value, an int in 0..9.

    Raises:
        ValueError: an unknown token, an operator without arguments, unbalanced ``]``, or trailing tokens.
    """
    toks = [t for t in (tokens.split() if isinstance(tokens, str) else list(tokens)) if t not in ("(", ")")]
    stack: list[tuple[str, list[int]]] = []
    result: int | None = None
    for i, tok in enumerate(toks):
        if result is not None:
            raise ValueError(f"evaluate_listops: tokens after the end of the expression at token {i}: {tok!r}")
        if tok in LISTOPS_OPERATORS:
            stack.append((tok, []))
            continue
        if tok == LISTOPS_CLOSE:
            if not stack:
                raise ValueError(f"evaluate_listops: ']' without an operator at token {i}")
            op, args = stack.pop()
            if not args:
                raise ValueError(f"evaluate_listops: {op} without arguments at token {i}")
            value = _apply(op, args)
        elif len(tok) == 1 and tok.isdigit():
            value = int(tok)
        else:
            raise ValueError(f"evaluate_listops: unknown token {tok!r} at position {i}; expected a digit, "
                             f"{', '.join(LISTOPS_OPERATORS)} or ']'")
        if stack:
            stack[-1][1].append(value)
        else:
            result = value
    if stack or result is None:
        raise ValueError(f"evaluate_listops: incomplete expression ({len(stack)} unclosed operator(s))")
    return result


def listops_ids(tokens: str | Sequence[str], length: int) -> tuple[np.ndarray, int]:
    """Token ids of an expression, padded with ``0`` to ``length``; parentheses are dropped.

    Returns:
        ``(ids, n)``: int64 array of shape ``[length]`` and the number ``n`` of real tokens.

    Raises:
        ValueError: an unknown token, or more than ``length`` tokens (the message gives both counts).
    """
    toks = [t for t in (tokens.split() if isinstance(tokens, str) else list(tokens)) if t not in ("(", ")")]
    unknown = sorted({t for t in toks if t not in LISTOPS_VOCAB})
    if unknown:
        raise ValueError(f"listops: unknown token(s) {unknown[:5]}; the vocabulary is {list(LISTOPS_VOCAB)}")
    if len(toks) > length:
        raise ValueError(f"listops: expression of {len(toks)} tokens does not fit argument 'length'={length}")
    ids = np.full(length, LISTOPS_PAD, dtype=np.int64)
    ids[:len(toks)] = [LISTOPS_VOCAB[t] for t in toks]
    return ids, len(toks)


def _tree(rng: np.random.Generator, depth: int, max_depth: int, max_args: int) -> Any:
    """A random expression tree: an int leaf, or ``(operator, [children])``; the root (depth 0) is an operator."""
    if depth > 0 and (depth >= max_depth or rng.random() < _LEAF_PROBABILITY):
        return int(rng.integers(0, 10))
    n_args = int(rng.integers(2, max_args + 1))
    children = [_tree(rng, depth + 1, max_depth, max_args) for _ in range(n_args)]
    return LISTOPS_OPERATORS[int(rng.integers(0, len(LISTOPS_OPERATORS)))], children


def _tokens(tree: Any) -> list[str]:
    if isinstance(tree, int):
        return [str(tree)]
    op, children = tree
    out = [op]
    for child in children:
        out += _tokens(child)
    return out + [LISTOPS_CLOSE]


def _size(tree: Any) -> int:
    return 1 if isinstance(tree, int) else 2 + sum(_size(c) for c in tree[1])


def lra_listops_string(tokens: str | Sequence[str]) -> str:
    """An expression in LRA's TSV form, with the parentheses of its left-nested binary tree.

    ``[MAX 2 9 ]`` -> ``( ( ( [MAX 2 ) 9 ) ] )``: an operator and its first argument form a pair, each further
    argument pairs with what came before, and the closing ``]`` pairs last; a pair is written ``( a b )``.

    Raises:
        ValueError: the tokens are not one well-formed expression.
    """
    toks = [t for t in (tokens.split() if isinstance(tokens, str) else list(tokens)) if t not in ("(", ")")]
    evaluate_listops(toks)  # validates
    pos = 0

    def parse() -> str:
        nonlocal pos
        tok = toks[pos]
        pos += 1
        if tok not in LISTOPS_OPERATORS:
            return tok
        text = tok
        while toks[pos] != LISTOPS_CLOSE:
            text = f"( {text} {parse()} )"
        pos += 1
        return f"( {text} {LISTOPS_CLOSE} )"

    return parse()


def _features(length: int) -> datasets.Features:
    return datasets.Features({
        "source": datasets.Value("string"),
        "input_ids": datasets.Sequence(datasets.Value("int64"), length=length),
        "length": datasets.Value("int64"),
        "target": datasets.Value("int64"),
    })


def listops(split: str = "train", *, max_depth: int = 6, max_args: int = 5, length: int = 1024,
            num_examples: int | None = 2048, seed: int = 0) -> datasets.Dataset | datasets.IterableDataset:
    """Seeded ListOps generator (PCT paper D.1: max_depth=6, max_args=5 at length 1,024; also 2 / 3).

    Drawing rule (LRA's generator with a zero-based depth, papers/NOTES.md): the root, at depth 0, is always an
    operator. A node below the root at depth ``d < max_depth`` is a leaf with probability 0.75, else an operator;
    at ``d = max_depth`` it is always a leaf. An operator is one of ``[MIN [MAX [MED [SM`` (uniform) with
    ``2..max_args`` children (uniform); a leaf is a digit 0..9 (uniform). So ``max_depth`` is the largest number
    of nested operators; with ``max_depth=2, max_args=3`` an expression has at most 17 tokens. An expression
    longer than ``length`` tokens is discarded and drawn again from the same row stream (deterministic).

    Vocabulary: see :data:`LISTOPS_VOCAB` (16 ids, 0 = padding). The target is the exact value
    (:func:`evaluate_listops`).

    Args:
        split: ``"train"``, ``"validation"`` or ``"test"`` (independent streams).
        max_depth: >= 1. max_args: >= 2. length: padded sequence length, >= 5 (the smallest expression,
            ``[MIN a b ]``, has 4 tokens).
        num_examples: number of rows (>= 1), or ``None`` for an unbounded stream.
        seed: non-negative int; same seed -> identical rows.

    Returns:
        Rows with ``"source"`` (str: the tokens joined by single spaces, no parentheses), ``"input_ids"`` (int64,
        ``length`` ids, padded with 0), ``"length"`` (int64: number of real tokens) and ``"target"`` (int64, 0..9).

    Raises:
        TypeError / ValueError: an argument of the wrong type or out of range (named in the message).
    """
    check_split("listops", split, ("train", "validation", "test"))
    max_depth = check_int("listops", "max_depth", max_depth, minimum=1)
    max_args = check_int("listops", "max_args", max_args, minimum=2)
    length = check_int("listops", "length", length, minimum=5)
    num_examples = check_count("listops", num_examples)
    seed = check_seed("listops", seed)

    def make_row(rng: np.random.Generator) -> dict[str, Any]:
        while True:
            tree = _tree(rng, 0, max_depth, max_args)
            if _size(tree) <= length:
                break
        toks = _tokens(tree)
        ids, n = listops_ids(toks, length)
        return {"source": " ".join(toks), "input_ids": ids, "length": n, "target": evaluate_listops(toks)}

    return generate("listops", make_row, _features(length), split, num_examples, seed)


def write_listops_tsv(path: str | os.PathLike, sources: Iterable[str], targets: Iterable[int]) -> Path:
    """Write expressions in LRA's TSV format: header ``Source\\tTarget``, one ``<LRA string>\\t<value>`` per line.

    Args:
        path: the file to write; missing parent folders are created.
        sources: expressions (any form :func:`lra_listops_string` accepts).
        targets: their values, ints 0..9.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: a malformed expression; ``sources`` and ``targets`` differ in length.
    """
    sources, targets = list(sources), list(targets)
    if len(sources) != len(targets):
        raise ValueError(f"write_listops_tsv: {len(sources)} sources but {len(targets)} targets")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write("Source\tTarget\n")
        for src, tgt in zip(sources, targets, strict=True):
            f.write(f"{lra_listops_string(src)}\t{int(tgt)}\n")
    return path


def _read_tsv(file: Path, length: int) -> datasets.Dataset:
    with file.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header != ["Source", "Target"]:
            raise ValueError(f"{file}: expected the header 'Source\\tTarget' of LRA's ListOps files, got {header!r}")
        sources, ids, lengths, targets = [], [], [], []
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != 2:
                raise ValueError(f"{file}, line {line_no}: expected 2 tab-separated fields, got {len(row)}")
            try:
                target = int(row[1])
                toks = [t for t in row[0].split() if t not in ("(", ")")]
                row_ids, n = listops_ids(toks, length)
            except ValueError as exc:
                raise ValueError(f"{file}, line {line_no}: {exc}") from None
            if not 0 <= target <= 9:
                raise ValueError(f"{file}, line {line_no}: target {target} is not a digit 0..9")
            sources.append(" ".join(toks))
            ids.append(row_ids)
            lengths.append(n)
            targets.append(target)
    if not sources:
        raise ValueError(f"{file} holds no examples")
    return to_dataset({"source": sources, "input_ids": np.stack(ids), "length": lengths, "target": targets},
                      _features(length))


def lra_listops(split: str, *, path: str | os.PathLike | None = None, length: int = 2000) -> datasets.Dataset:
    """LRA's ListOps release read from its TSV files (columns as :func:`listops`).

    Sources, in order: ``path=`` (a TSV file, read whatever the split; or a folder holding
    ``basic_train.tsv``, ``basic_val.tsv``, ``basic_test.tsv``), then ``$CNET_DATA_DIR/listops-1000/``. There is no
    Hub source (LRA ships a tarball).

    Args:
        split: ``"train"``, ``"validation"`` (file ``basic_val.tsv``) or ``"test"``.
        path: see above.
        length: padded length, >= 1 (LRA: 2,000); a longer expression is an error, never truncated.

    Returns:
        A :class:`datasets.Dataset` with ``"source"``, ``"input_ids"``, ``"length"``, ``"target"`` as in
        :func:`listops`; the targets are taken from the file, not recomputed.

    Raises:
        ValueError: unknown ``split``; a wrong header, an unknown token, a target outside 0..9, an expression
            longer than ``length`` (file and line named).
        FileNotFoundError: ``path`` missing; the split's file missing from the folder; or no source.
    """
    check_split("lra_listops", split, tuple(_LRA_FILES))
    length = check_int("lra_listops", "length", length, minimum=1)
    if path is not None and Path(path).is_file():
        return _read_tsv(Path(path), length)
    folder = local_dir(LRA_LISTOPS_DIR, path)
    if folder is None:
        raise not_found_error("lra_listops", f"{LRA_LISTOPS_DIR}/{_LRA_FILES[split]}", None,
                                   "no Hub copy of LRA's ListOps is used")
    file = folder / _LRA_FILES[split]
    if not file.is_file():
        raise FileNotFoundError(f"lra_listops: no {_LRA_FILES[split]} in {folder} for split={split!r}; "
                                f"expected LRA's files {', '.join(_LRA_FILES.values())}")
    return _read_tsv(file, length)
