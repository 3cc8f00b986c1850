// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

mod compacted_key_writer;

mod compacted_row;
mod compacted_row_reader;
mod compacted_row_writer;

pub use compacted_key_writer::CompactedKeyWriter;
#[allow(unused_imports)]
pub use compacted_row::{CompactedRow, calculate_bit_set_width_in_bytes};
#[allow(unused_imports)]
pub use compacted_row_reader::{CompactedRowDeserializer, CompactedRowReader};
#[allow(unused_imports)]
pub use compacted_row_writer::CompactedRowWriter;
