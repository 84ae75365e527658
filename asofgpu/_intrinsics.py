"""Three machine operations numba does not offer, as intrinsics for the CPU kernels.

``prefetch(array, i)``: a hint to start loading ``array[i]`` into the cache now; it never
faults and changes no result. The prepared probe (kernels/cursor.py) of time-ordered rows
reads a new cache line of right keys for almost every row, each in another group's stretch of
an array far larger than the cache. Each read waits for memory behind the previous row's
branches; a prefetch issued some rows ahead overlaps those waits.

``load_word(data, p)``: the 8 bytes of a ``uint8`` array from position p as one
little-endian ``uint64``, in one (unaligned) load, for the string hash (kernels/strings.py):
assembling a 5-byte ticker byte by byte was half of hashing it. The caller keeps p + 8 within
the array; nothing is checked.

``load_at(address, i, like)``: element ``i`` of the array of ``like``'s dtype that starts at
the integer ``address``, for the gather of a chunked column (kernels/take.py): each chunk of
an Arrow column is a buffer of its own, and reading them where they lie saves copying them
into one (a 10M-row table read from parquet arrives in 77 chunks a column, ten runs of
them). The caller keeps the buffers alive and ``i`` within them; nothing is checked.
"""

import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _is_vector(array, index) -> bool:
    return isinstance(array, types.Array) and array.ndim == 1 and isinstance(index, types.Integer)


def _byte_pointer(context, builder, array_type, array, index):
    view = context.make_array(array_type)(context, builder, array)
    pointer = cgutils.get_item_pointer(
        context, builder, array_type, view, [index], wraparound=False, boundscheck=False
    )
    return builder.bitcast(pointer, ir.IntType(8).as_pointer())


@intrinsic
def prefetch(typingctx, array, index):
    if not _is_vector(array, index):
        return None

    def codegen(context, builder, signature, args):
        byte_pointer = _byte_pointer(context, builder, signature.args[0], *args)
        i32 = ir.IntType(32)
        # The typed-pointer name: right for the LLVM of older numbas, and upgraded by newer
        # LLVMs (opaque pointers) to their "llvm.prefetch.p0".
        hint = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [byte_pointer.type, i32, i32, i32]),
            "llvm.prefetch.p0i8",
        )
        # read (0), keep in every cache level (3), data cache (1)
        builder.call(hint, [byte_pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@intrinsic
def load_word(typingctx, data, index):
    if not _is_vector(data, index) or data.dtype != types.uint8:
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        byte_pointer = _byte_pointer(context, builder, signature.args[0], *args)
        word = builder.load(builder.bitcast(byte_pointer, i64.as_pointer()), align=1)
        if sys.byteorder == "big":  # the bytes in memory order, first byte lowest
            swap = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i64, [i64]), "llvm.bswap.i64"
            )
            word = builder.call(swap, [word])
        return word

    return types.uint64(data, index), codegen


@intrinsic
def load_at(typingctx, address, index, like):
    if not (
        isinstance(address, types.Integer)
        and isinstance(index, types.Integer)
        and isinstance(like, types.Array)
    ):
        return None

    def codegen(context, builder, signature, args):
        address, index, _ = args
        value_type = context.get_data_type(signature.args[2].dtype)
        base = builder.inttoptr(
            context.cast(builder, address, signature.args[0], types.uint64), value_type.as_pointer()
        )
        offset = context.cast(builder, index, signature.args[1], types.uint64)
        return builder.load(builder.gep(base, [offset]))

    return like.dtype(address, index, like), codegen
