package layerfs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/archfilter/archfilter/internal/fuzzcheck"
)

// entry is one tar entry: "name" a file with body, "name/" a directory, "name -> target"
// a symlink, "name => target" a hard link.
type entry struct{ spec, body string }

func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.spec, Mode: 0o755, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case strings.Contains(e.spec, " -> "):
			h.Name, h.Linkname, _ = strings.Cut(e.spec, " -> ")
			h.Typeflag, h.Size = tar.TypeSymlink, 0
		case strings.Contains(e.spec, " => "):
			h.Name, h.Linkname, _ = strings.Cut(e.spec, " => ")
			h.Typeflag, h.Size = tar.TypeLink, 0
		case strings.HasSuffix(e.spec, "/"):
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stack builds layers (bottom first) from blobs and counts how often each is opened.
func stack(blobs ...[]byte) ([]Layer, []int) {
	opened := make([]int, len(blobs))
	layers := make([]Layer, len(blobs))
	for i, b := range blobs {
		layers[i] = Layer{Digest: "sha256:layer" + string(rune('0'+i)), Size: int64(len(b)), Open: func(context.Context) (io.ReadCloser, error) {
			opened[i]++
			return io.NopCloser(bytes.NewReader(b)), nil
		}}
	}
	return layers, opened
}

func TestFind(t *testing.T) {
	ctx := context.Background()
	base := gzipped(t, tarOf(t,
		entry{"bin -> usr/bin", ""}, entry{"usr/", ""}, entry{"usr/bin/", ""},
		entry{"usr/bin/sh", "ELF-sh"}, entry{"usr/bin/env", "ELF-env"}, entry{"usr/bin/python3 -> python3.12", ""},
		entry{"usr/bin/python3.12", "ELF-python"}, entry{"opt/tool/run", "old"}, entry{"etc/gone", "x"},
		entry{"usr/local/bin/dup", "lower"},
	))
	app := gzipped(t, tarOf(t,
		entry{"app/", ""}, entry{"app/server", "ELF-server"}, entry{"app/link -> ../bin/sh", ""},
		entry{"app/hard => usr/bin/env", ""}, entry{"app/loop1 -> loop2", ""}, entry{"app/loop2 -> loop1", ""},
		entry{"opt/tool/.wh..wh..opq", ""}, entry{"opt/tool/new", "new"}, entry{"etc/.wh.gone", ""},
		entry{"usr/bin/dup", "upper"},
	))
	for _, tc := range []struct {
		name       string
		candidates []string
		resolved   string
		prefix     string
		err        string
	}{
		{name: "file in the top layer", candidates: []string{"/app/server"}, resolved: "/app/server", prefix: "ELF-server"},
		{name: "through a directory symlink", candidates: []string{"/bin/sh"}, resolved: "/usr/bin/sh", prefix: "ELF-sh"},
		{name: "relative symlink to a symlinked directory", candidates: []string{"/app/link"}, resolved: "/usr/bin/sh", prefix: "ELF-sh"},
		{name: "symlink in the same directory", candidates: []string{"/usr/bin/python3"}, resolved: "/usr/bin/python3.12", prefix: "ELF-python"},
		{name: "hard link", candidates: []string{"/app/hard"}, resolved: "/usr/bin/env", prefix: "ELF-env"},
		{name: "PATH order wins over layer order", candidates: []string{"/usr/local/bin/dup", "/usr/bin/dup"}, resolved: "/usr/local/bin/dup", prefix: "lower"},
		{name: "first existing PATH entry", candidates: []string{"/usr/local/sbin/sh", "/usr/local/bin/sh", "/bin/sh"}, resolved: "/usr/bin/sh", prefix: "ELF-sh"},
		{name: "opaque directory hides the lower layer", candidates: []string{"/opt/tool/run"}, err: "not found"},
		{name: "opaque directory keeps its own layer", candidates: []string{"/opt/tool/new"}, resolved: "/opt/tool/new", prefix: "new"},
		{name: "whiteout", candidates: []string{"/etc/gone"}, err: "not found"},
		{name: "missing", candidates: []string{"/nope"}, err: "not found"},
		{name: "symlink loop", candidates: []string{"/app/loop1"}, err: "links followed"},
		{name: "directory", candidates: []string{"/usr/bin"}, err: "is a directory"},
		{name: "file as a directory", candidates: []string{"/app/server/x"}, err: "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layers, _ := stack(base, app)
			f, err := New(layers, Options{}).Find(ctx, tc.candidates...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error containing %q", f, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Resolved != tc.resolved || string(f.Prefix) != tc.prefix {
				t.Errorf("got %s %q, want %s %q", f.Resolved, f.Prefix, tc.resolved, tc.prefix)
			}
		})
	}
}

// TestFindStopsReading: a file in the top layer reads only that layer, up to the file.
func TestFindStopsReading(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	top := tarOf(t, entry{"app/server", "ELF"}, entry{"app/data", big})
	layers, opened := stack(gzipped(t, tarOf(t, entry{"bin/sh", "sh"})), top)
	fs := New(layers, Options{})
	if _, err := fs.Find(context.Background(), "/app/server"); err != nil {
		t.Fatal(err)
	}
	if opened[0] != 0 || opened[1] != 1 {
		t.Errorf("layers opened %v, want [0 1]", opened)
	}
	if fs.BytesRead() >= int64(len(top))/2 {
		t.Errorf("read %d of the top layer's %d bytes: want it to stop after the file", fs.BytesRead(), len(top))
	}
}

func TestFindLimits(t *testing.T) {
	ctx := context.Background()
	small := gzipped(t, tarOf(t, entry{"bin/sh", "sh"}))
	layers, opened := stack(small, small)
	layers[1].Size = 300 << 20
	_, err := New(layers, Options{}).Find(ctx, "/bin/sh")
	var tooLarge *LayerTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Index != 1 || opened[1] != 0 || !strings.Contains(err.Error(), "300.0 MiB > limit 256.0 MiB") {
		t.Errorf("got %v (opened %v); want layer 1 refused unopened", err, opened)
	}

	// A layer larger than it claims is read up to its descriptor's size.
	liar := gzipped(t, tarOf(t, entry{"pad", strings.Repeat("y", 64<<10)}, entry{"bin/sh", "sh"}))
	layers, _ = stack(liar)
	layers[0].Size = 100
	if _, err := New(layers, Options{MaxLayerBytes: 1000}).Find(ctx, "/bin/sh"); err == nil {
		t.Errorf("a layer larger than its descriptor: got no error")
	}
	short := gzipped(t, tarOf(t, entry{"pad", "y"}, entry{"bin/sh", "sh"}))
	layers, _ = stack(short)
	layers[0].Size = 40
	if _, err := New(layers, Options{}).Find(ctx, "/bin/sh"); err == nil || !strings.Contains(err.Error(), "cut at the descriptor's size, 40 bytes") {
		t.Errorf("a compressed layer cut at its descriptor's size: got %v", err)
	}

	// An archive bomb stops at the uncompressed limit.
	bomb := gzipped(t, tarOf(t, entry{"pad", strings.Repeat("\x00", 4<<20)}, entry{"bin/sh", "sh"}))
	layers, _ = stack(bomb)
	if _, err := New(layers, Options{MaxLayerBytes: int64(len(bomb)) + 10}).Find(ctx, "/bin/sh"); err == nil || !strings.Contains(err.Error(), "decompresses to more") {
		t.Errorf("archive bomb: got %v", err)
	}
}

func TestFindCompressions(t *testing.T) {
	plain := tarOf(t, entry{"bin/sh", "plain"})
	var zbuf bytes.Buffer
	zw, err := zstd.NewWriter(&zbuf)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(tarOf(t, entry{"bin/sh", "zstd"}))
	_ = zw.Close()
	for want, blob := range map[string][]byte{"plain": plain, "zstd": zbuf.Bytes()} {
		layers, _ := stack(blob)
		f, err := New(layers, Options{}).Find(context.Background(), "/bin/sh")
		if err != nil || string(f.Prefix) != want {
			t.Errorf("%s: got %q, %v", want, f.Prefix, err)
		}
	}
}

// TestFindHardLinkBehindPendingCandidate: a hard link found in an upper layer for a
// later PATH entry is followed in its own layer, once the earlier entry is known absent.
func TestFindHardLinkBehindPendingCandidate(t *testing.T) {
	base := gzipped(t, tarOf(t, entry{"usr/bin/tool", "old"}))
	mid := gzipped(t, tarOf(t, entry{"usr/local/bin/.wh.tool", ""}))
	top := gzipped(t, tarOf(t, entry{"opt/real", "new"}, entry{"usr/bin/tool => opt/real", ""}))
	layers, _ := stack(base, mid, top)
	f, err := New(layers, Options{}).Find(context.Background(), "/usr/local/bin/tool", "/usr/bin/tool")
	if err != nil || string(f.Prefix) != "new" || f.Layer != 2 || f.Path != "/usr/bin/tool" {
		t.Errorf("got %+v, %v; want /usr/bin/tool -> /opt/real from layer 2", f, err)
	}
}

// TestFindReadsTheDescriptorsSize: a registry that sends more than the descriptor's size
// is read up to that size, and no further: the limits, checked against the size, hold
// (FuzzFind's seed of two lying layers read 564 bytes under a 532-byte MaxTotalBytes), and
// they refuse, never change an answer (a plain tar cut at a block boundary by the layer
// limit, when the limit was read past the size, was taken as the whole layer: "not found"
// under a 1023-byte MaxLayerBytes, the file under the default).
func TestFindReadsTheDescriptorsSize(t *testing.T) {
	blob := tarOf(t, entry{"a", "x"}, entry{"bin/sh", "sh"})
	for _, size := range []int64{0, 1024, 2048, int64(len(blob))} {
		var answers []string
		for _, opts := range []Options{{MaxLayerBytes: 1023}, {MaxLayerBytes: 2048, MaxTotalBytes: 1100}, {}} {
			layers, _ := stack(blob)
			layers[0].Size = size
			fs := New(layers, opts)
			f, err := fs.Find(context.Background(), "/bin/sh")
			if read := fs.BytesRead(); read > size || read > fs.opts.MaxTotalBytes {
				t.Errorf("size %d, %+v: read %d bytes", size, opts, read)
			}
			var tooLarge *LayerTooLargeError
			if !errors.As(err, &tooLarge) {
				answers = append(answers, fmt.Sprintf("%q %v", f.Prefix, err))
			}
		}
		for _, a := range answers[1:] {
			if a != answers[0] {
				t.Errorf("size %d: the limits changed the answer: %q", size, answers)
			}
		}
	}
}

// zstdFrame is content in one raw block of a zstd frame whose header declares a window
// (window log 10 + windowLog/8): no content size, as a stream writes it.
func zstdFrame(windowByte byte, content []byte) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, windowByte}
	h := len(content)<<3 | 1 // raw, last block
	return append(append(b, byte(h), byte(h>>8), byte(h>>16)), content...)
}

// TestFindZstdWindow: the zstd decoder allocates the window a frame declares before it
// decodes anything; a window larger than the layer may decompress to, or than zstd's own
// default limit, is refused before it costs memory (a 20-byte layer declaring 256 MiB took
// 257 MiB, FuzzFind's zstd-long-window seed 258 MiB).
func TestFindZstdWindow(t *testing.T) {
	content := tarOf(t, entry{"bin/sh", "zstd"})
	for _, tc := range []struct {
		name   string
		window byte
		opts   Options
		err    string
	}{
		{"8 MiB window, 16 MiB may be decompressed", 13 << 3, Options{MaxLayerBytes: 1 << 20}, ""},
		{"8 MiB window, 1 MiB may be decompressed", 13 << 3, Options{MaxLayerBytes: 64 << 10}, "window size exceeded"},
		{"256 MiB window", 18 << 3, Options{}, "window size exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layers, _ := stack(zstdFrame(tc.window, content))
			var (
				f   File
				err error
			)
			fuzzcheck.Within(t, "Find", fuzzcheck.Limits{Alloc: 10 * fuzzcheck.MiB}, func() {
				f, err = New(layers, tc.opts).Find(context.Background(), "/bin/sh")
			})
			if tc.err == "" && (err != nil || string(f.Prefix) != "zstd") {
				t.Errorf("got %q, %v; want the file", f.Prefix, err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %q, %v; want an error containing %q", f.Prefix, err, tc.err)
			}
		})
	}
}
