package discordtest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
)

// Transport compressions a gateway client may ask for in the compress query
// parameter, and the payload compression it may ask for in IDENTIFY.
const (
	compressNone       = ""
	compressZlibStream = "zlib-stream"
	compressZstdStream = "zstd-stream"
)

// frameEncoder turns gateway payloads into websocket messages for one
// connection. It keeps the stream state of stream compressions and is used
// by the connection's writer goroutine only.
type frameEncoder interface {
	// encode returns the message to send and whether it is binary.
	encode(payload []byte, zlibPayload bool) ([]byte, bool, error)
}

func newFrameEncoder(compress string) frameEncoder {
	switch compress {
	case compressZlibStream:
		e := &zlibStreamEncoder{}
		e.w = zlib.NewWriter(&e.buf)
		return e
	case compressZstdStream:
		return &zstdStreamEncoder{}
	default:
		return plainEncoder{}
	}
}

// plainEncoder sends text messages, or a self-contained zlib stream per
// message when IDENTIFY asked for payload compression.
type plainEncoder struct{}

func (plainEncoder) encode(payload []byte, zlibPayload bool) ([]byte, bool, error) {
	if !zlibPayload {
		return payload, false, nil
	}
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	if _, err := w.Write(payload); err != nil {
		return nil, false, err
	}
	if err := w.Close(); err != nil {
		return nil, false, err
	}
	return buf.Bytes(), true, nil
}

// zlibStreamEncoder implements zlib-stream: one zlib stream over the whole
// connection, each message ending in a sync flush (00 00 ff ff).
type zlibStreamEncoder struct {
	buf bytes.Buffer
	w   *zlib.Writer
}

func (e *zlibStreamEncoder) encode(payload []byte, _ bool) ([]byte, bool, error) {
	e.buf.Reset()
	if _, err := e.w.Write(payload); err != nil {
		return nil, false, err
	}
	if err := e.w.Flush(); err != nil {
		return nil, false, err
	}
	return bytes.Clone(e.buf.Bytes()), true, nil
}

// zstdStreamEncoder implements zstd-stream: one zstd frame over the whole
// connection, each message a whole number of blocks. It stores the payload
// in raw (uncompressed) blocks, which every zstd decoder accepts; the
// stand-in runs on loopback and has nothing to gain from compressing.
type zstdStreamEncoder struct {
	started bool
}

const (
	zstdMagic = 0xFD2FB528
	// zstdWindowDescriptor declares a 1 MiB window: exponent 10, mantissa 0.
	zstdWindowDescriptor = 10 << 3
	// zstdMaxBlock is the largest block a 1 MiB window allows (128 KiB).
	zstdMaxBlock = 128 << 10
)

func (e *zstdStreamEncoder) encode(payload []byte, _ bool) ([]byte, bool, error) {
	out := make([]byte, 0, len(payload)+16)
	if !e.started {
		e.started = true
		out = binary.LittleEndian.AppendUint32(out, zstdMagic)
		// Frame header descriptor: no content size, not single segment, no
		// checksum, no dictionary; then the window descriptor.
		out = append(out, 0x00, zstdWindowDescriptor)
	}
	for len(payload) > 0 {
		n := min(len(payload), zstdMaxBlock)
		// Block header, 3 bytes little endian: last-block bit 0, block type
		// 0 (raw) in bits 1-2, block size in bits 3-23.
		h := uint32(n) << 3
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
		out = append(out, payload[:n]...)
		payload = payload[n:]
	}
	return out, true, nil
}
