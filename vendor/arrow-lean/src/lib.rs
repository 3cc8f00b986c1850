//! The `arrow` crate's module paths (`arrow::array`, `arrow::datatypes`, `arrow::ipc`, …)
//! over the Arrow crates fluss-rs really uses: arrays, buffers, schemas, IPC and the selection
//! kernels (`take`, `concat`, `interleave`). The `arrow` crate itself always brings every compute kernel
//! (cast, ordering, arithmetic, strings, rows): about 280 CPU-seconds of every cold build for
//! two calls fluss-rs makes, now written out in fluss-rs itself (see ../fluss-rs/PATCHED.md).
//! Every item here is re-exported unchanged from the arrow crate that defines it.

pub use arrow_buffer::{alloc, buffer};

pub mod array {
    pub use arrow_array::builder::*;
    pub use arrow_array::cast::*;
    pub use arrow_array::iterator::*;
    pub use arrow_array::*;
    pub use arrow_data::transform::{Capacities, MutableArrayData};
    pub use arrow_data::{
        layout, ArrayData, ArrayDataBuilder, ArrayDataRef, BufferSpec, ByteView, DataTypeLayout,
        MAX_INLINE_VIEW_LEN,
    };
}

pub mod compute {
    pub use arrow_select::concat::{concat, concat_batches};
    pub use arrow_select::filter::{filter, filter_record_batch};
    pub use arrow_select::interleave::{interleave, interleave_record_batch};
    pub use arrow_select::take::{take, take_record_batch};

    pub mod kernels {
        pub use arrow_select::{concat, filter, interleave, take};
    }
}

pub mod datatypes {
    pub use arrow_array::types::*;
    pub use arrow_array::{ArrowNativeTypeOp, ArrowNumericType, ArrowPrimitiveType};
    pub use arrow_buffer::{i256, ArrowNativeType, ToByteSlice};
    pub use arrow_data::decimal::*;
    pub use arrow_schema::{
        DataType, Field, FieldRef, Fields, IntervalUnit, Schema, SchemaBuilder, SchemaRef,
        TimeUnit, UnionFields, UnionMode,
    };
}

pub mod error {
    pub use arrow_schema::ArrowError;
    pub type Result<T> = std::result::Result<T, ArrowError>;
}

pub use arrow_ipc as ipc;

pub mod record_batch {
    pub use arrow_array::{
        RecordBatch, RecordBatchIterator, RecordBatchOptions, RecordBatchReader, RecordBatchWriter,
    };
}
