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

use crate::metadata::AclFilter;
use crate::rpc::api_key::ApiKey;
use crate::rpc::frame::{ReadError, WriteError};
use crate::rpc::message::{ReadType, RequestBody, WriteType};
use crate::{impl_read_type, impl_write_type, proto};
use bytes::{Buf, BufMut};
use prost::Message;

#[derive(Debug)]
pub struct DropAclsRequest {
    pub(crate) inner_request: proto::DropAclsRequest,
}

impl DropAclsRequest {
    pub fn new(acl_filter: Vec<AclFilter>) -> Self {
        DropAclsRequest {
            inner_request: proto::DropAclsRequest {
                acl_filter: acl_filter.iter().map(AclFilter::to_pb).collect(),
            },
        }
    }
}

impl RequestBody for DropAclsRequest {
    type ResponseBody = proto::DropAclsResponse;
    const API_KEY: ApiKey = ApiKey::DropAcls;
}

impl_write_type!(DropAclsRequest);
impl_read_type!(proto::DropAclsResponse);
