"""``prefetch(array, i)``: a hint, compiled by numba, to start loading ``array[i]`` into the
cache now; it never faults and changes no result.

The prepared probe (kernels/cursor.py) of time-ordered rows reads a new cache line of right
keys for almost every row, each in another group's stretch of an array far larger than the
cache. Each read waits for memory behind the previous row's branches; a prefetch issued some
rows ahead overlaps those waits.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    if not isinstance(array, types.Array) or array.ndim != 1 or not isinstance(
            index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]],
                                           wraparound=False, boundscheck=False)
        byte_pointer = builder.bitcast(pointer, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        # The typed-pointer name: right for the LLVM of older numbas, and upgraded by newer
        # LLVMs (opaque pointers) to their "llvm.prefetch.p0".
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer.type, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # read (0), keep in every cache level (3), data cache (1)
        builder.call(hint, [byte_pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen
