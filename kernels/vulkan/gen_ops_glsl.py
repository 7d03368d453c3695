#!/usr/bin/env python3
"""Writes ops.glsl from runtime/graph/ops.def: the op ids (OP_<NAME>, the
OpKind values the C++ side passes as the shaders' OP specialization constant)
and, for every RT_UNARY and RT_UNARY_P line, its formula as GLSL (unary.glsl
calls these; an RT_UNARY_P formula's a and b are the push constants' min_lo
and max_lo as float32 bits, float types only):
  gen_ops_glsl.py ops.def > ops.glsl
"""
import re
import sys

FLOAT_ONLY = {"kFloatingTypes"}


def split_args(text):
    """The top-level comma-separated arguments of a macro call's argument text."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    args.append(cur.strip())
    return args


def main(path):
    ops, unary = [], []
    for line in open(path):
        m = re.match(r"(RT_OP|RT_OP_P|RT_UNARY|RT_UNARY_P|RT_BINARY)\((.*)\)\s*(//.*)?$", line.rstrip("\n"))
        if not m:
            continue
        args = split_args(m.group(2))
        ops.append(args[1])
        if m.group(1) == "RT_UNARY":
            if len(args) != 9:
                sys.exit("%s: RT_UNARY(%s) has %d arguments, expected 9" % (path, args[0], len(args)))
            unary.append((len(ops) - 1, args[0], args[2], args[4]))
        elif m.group(1) == "RT_UNARY_P":
            if len(args) != 12:
                sys.exit("%s: RT_UNARY_P(%s) has %d arguments, expected 12" % (path, args[0], len(args)))
            if args[2] not in FLOAT_ONLY:
                sys.exit("%s: RT_UNARY_P(%s): the shaders give a and b to float types only" % (path, args[0]))
            unary.append((len(ops) - 1, args[0], args[2], args[3]))
    out = ["// Generated from runtime/graph/ops.def by kernels/vulkan/gen_ops_glsl.py. Do not edit.",
           "// The op ids: OpKind values, as the C++ side passes them in OP."]
    for i, name in enumerate(ops):
        out.append("const uint OP_%s = %du;" % (name.upper(), i))
    out.append("const uint OP_COUNT = %du;" % len(ops))
    out.append("")
    out.append("// The RT_UNARY formulas, on the compute type T (the helpers are unary.glsl's).")
    out.append("#ifdef EMBER_UNARY_FORMULAS")
    variants = [("float", "f", None), ("int", "i", "int"), ("int64_t", "l", "int64")]
    for glsl_type, suffix, integral in variants:
        if suffix == "l":
            out.append("#if EMBER_EXT")
        out.append("%s unary_formula_%s(%s x) {" % (glsl_type, suffix, glsl_type))
        out.append("#define T %s" % glsl_type)
        if not integral:
            out.append("  const float a = uintBitsToFloat(p.min_lo), b = uintBitsToFloat(p.max_lo);")
        for op_id, name, dtypes, formula in unary:
            if integral and dtypes in FLOAT_ONLY:
                continue
            out.append("  if (OP == %du) return %s(%s);  // %s" % (op_id, glsl_type, formula, name))
        out.append("#undef T")
        out.append("  return x;")
        out.append("}")
        if suffix == "l":
            out.append("#endif")
    out.append("#endif  // EMBER_UNARY_FORMULAS")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
