//! A minimal protobuf writer (varints and length-delimited fields): all the Perfetto
//! export needs, without a code generator or a runtime library.

/// One message being built; nested messages are built in their own [`Msg`] and added
/// whole, since a length-delimited field's length comes before its bytes.
#[derive(Default)]
pub(crate) struct Msg {
    buf: Vec<u8>,
}

/// Wire type 0: varint.
const VARINT: u32 = 0;
/// Wire type 2: length-delimited (strings, bytes, nested messages).
const LEN: u32 = 2;

impl Msg {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Msg {
            buf: Vec::with_capacity(n),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.buf.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// A uint32/uint64/enum field.
    pub(crate) fn uint(&mut self, field: u32, v: u64) {
        put_varint(&mut self.buf, u64::from(field << 3 | VARINT));
        put_varint(&mut self.buf, v);
    }

    /// An int32/int64 field: negative values take ten bytes, as protobuf says (not
    /// zigzag: that is sint32/sint64).
    pub(crate) fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    pub(crate) fn bytes_field(&mut self, field: u32, b: &[u8]) {
        put_varint(&mut self.buf, u64::from(field << 3 | LEN));
        put_varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    pub(crate) fn str(&mut self, field: u32, s: &str) {
        self.bytes_field(field, s.as_bytes());
    }

    /// Fields encoded elsewhere, appended as they are.
    pub(crate) fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    pub(crate) fn msg(&mut self, field: u32, m: &Msg) {
        self.bytes_field(field, &m.buf);
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_encoded_as_protobuf_says() {
        let mut m = Msg::default();
        m.uint(1, 150);
        assert_eq!(m.bytes(), [0x08, 0x96, 0x01]);
        m.clear();
        m.str(2, "testing");
        assert_eq!(m.bytes(), b"\x12\x07testing");
        m.clear();
        m.int(3, -1);
        assert_eq!(m.bytes().len(), 11, "tag and ten bytes");
        let mut outer = Msg::default();
        let mut inner = Msg::default();
        inner.uint(1, 150);
        outer.msg(3, &inner);
        assert_eq!(outer.bytes(), [0x1a, 0x03, 0x08, 0x96, 0x01]);
    }
}
