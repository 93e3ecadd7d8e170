package layerfs

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/archfilter/archfilter/internal/exechdr"
	"github.com/archfilter/archfilter/internal/fuzzcheck"
)

// layerSep splits FuzzFind's data into layers (at most maxFuzzLayers).
var layerSep = []byte("--layer--")

const maxFuzzLayers = 4

// How FuzzFind's wrap argument treats each layer's bytes (two bits a layer, bottom layer
// in the low bits): as they are (a blob, possibly gzip or zstd already), or as a tar the
// target compresses, so that mutations of the tar reach the decompressors intact.
const (
	wrapNone = iota
	wrapGzip
	wrapZstd
	wrapNone2
)

// How FuzzFind's sizes argument sets each layer's descriptor size (two bits a layer): the
// blob's length, or a registry's lie (0, half of it, or more than the layer limit).
const (
	sizeHonest = iota
	sizeZero
	sizeHalf
	sizeTooLarge
)

// deepPath is the kubectl plugin's default PATH (internal/kubectlplugin's defaultPath),
// which the --deep check searches for a bare command.
const deepPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// fuzzOptions makes Options from FuzzFind's limits argument: the low 16 bits are
// MaxLayerBytes (0: 64 KiB), times 16 when bit 28 is set (a limit that admits zstd's
// default 8 MiB window), or when bit 29 is set that fraction (of 65536) of the largest
// blob; the next 8 bits MaxTotalBytes in 256-byte units (0: New's default, 4 ×
// MaxLayerBytes), or when bit 30 is set that fraction (of 256) of all blobs; the next 4
// bits MaxHops (0: the default). The fractions put the limits where the layers are cut.
func fuzzOptions(limits uint32, blobs [][]byte) Options {
	o := Options{MaxLayerBytes: int64(limits & 0xffff), MaxTotalBytes: int64(limits>>16&0xff) * 256, MaxHops: int(limits >> 24 & 0xf)}
	var largest, all int64
	for _, b := range blobs {
		largest, all = max(largest, int64(len(b))), all+int64(len(b))
	}
	switch {
	case limits&(1<<29) != 0:
		o.MaxLayerBytes = 1 + largest*o.MaxLayerBytes>>16
	case o.MaxLayerBytes == 0:
		o.MaxLayerBytes = 64 << 10
	}
	if limits&(1<<28) != 0 {
		o.MaxLayerBytes *= 16
	}
	if limits&(1<<30) != 0 {
		o.MaxTotalBytes = 1 + all*int64(limits>>16&0xff)>>8
	}
	return o
}

// fuzzCandidates makes the paths Find looks up from name, as the --deep check does from
// an image's entrypoint: an absolute path as is, a bare command in each directory of
// PATH. A name with ':' is a list of paths, as an image's own PATH can make it.
func fuzzCandidates(name string) []string {
	switch {
	case strings.Contains(name, ":"):
		c := strings.Split(name, ":")
		return c[:min(len(c), 8)]
	case strings.HasPrefix(name, "/"):
		return []string{name}
	case strings.Contains(name, "/"):
		return []string{path.Join("/", name)}
	}
	var out []string
	for _, d := range strings.Split(deepPath, ":") {
		out = append(out, path.Join(d, name))
	}
	return out
}

var (
	fuzzZstd, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	fuzzGzip    = gzip.NewWriter(io.Discard)
)

// fuzzBlobs splits data into blobs, compressing those wrap says.
func fuzzBlobs(data []byte, wrap uint8) [][]byte {
	parts := bytes.SplitN(data, layerSep, maxFuzzLayers)
	for i, p := range parts {
		switch wrap >> (2 * i) & 3 {
		case wrapGzip:
			var buf bytes.Buffer
			fuzzGzip.Reset(&buf)
			_, _ = fuzzGzip.Write(p)
			_ = fuzzGzip.Close()
			parts[i] = buf.Bytes()
		case wrapZstd:
			parts[i] = fuzzZstd.EncodeAll(p, nil)
		}
	}
	return parts
}

// fakeRegistry serves blobs as layers and records what Find did with them.
type fakeRegistry struct {
	blobs  [][]byte
	sizes  []int64
	opened []int   // per layer
	open   int     // readers not closed
	read   []int64 // bytes delivered by each Open, in order
	layers []int   // the layer of each Open, in order
}

func newFakeRegistry(blobs [][]byte, sizes uint8, opts Options) *fakeRegistry {
	r := &fakeRegistry{blobs: blobs, sizes: make([]int64, len(blobs)), opened: make([]int, len(blobs))}
	for i, b := range blobs {
		switch sizes >> (2 * i) & 3 {
		case sizeHonest:
			r.sizes[i] = int64(len(b))
		case sizeZero:
			r.sizes[i] = 0
		case sizeHalf:
			r.sizes[i] = int64(len(b) / 2)
		case sizeTooLarge:
			r.sizes[i] = int64(len(b)) + opts.MaxLayerBytes + 1
		}
	}
	return r
}

func (r *fakeRegistry) Layers() []Layer {
	layers := make([]Layer, len(r.blobs))
	for i := range r.blobs {
		layers[i] = Layer{Digest: fmt.Sprintf("sha256:%d", i), Size: r.sizes[i], Open: func(context.Context) (io.ReadCloser, error) {
			r.opened[i]++
			r.open++
			r.layers = append(r.layers, i)
			r.read = append(r.read, 0)
			return &fakeBlob{r: r, n: len(r.read) - 1, rd: bytes.NewReader(r.blobs[i])}, nil
		}}
	}
	return layers
}

type fakeBlob struct {
	r      *fakeRegistry
	n      int
	rd     *bytes.Reader
	closed bool
}

func (b *fakeBlob) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("read after Close")
	}
	n, err := b.rd.Read(p)
	b.r.read[b.n] += int64(n)
	return n, err
}

func (b *fakeBlob) Close() error {
	if !b.closed {
		b.closed = true
		b.r.open--
	}
	return nil
}

// lookup is one Find and its answer, comparable across runs.
type lookup struct {
	candidates []string
	file       File
	err        error
	opens      int // layers opened
}

func (l lookup) definite() bool { return l.err == nil || errors.Is(l.err, ErrNotFound) }

func (l lookup) same(o lookup) bool {
	return errText(l.err) == errText(o.err) && equalFiles(l.file, o.file) && slices.Equal(l.candidates, o.candidates)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// fuzzLookups does what the --deep check does with an image: find the entrypoint and,
// when it is a "#!" script, its interpreter and the command env runs; then the entrypoint
// again, on the same FS. Each Find is checked as it returns; each runs within the time
// limit and, when prev (an earlier run's lookups) tells how many layers it opens, within
// findAlloc.
func fuzzLookups(t *testing.T, r *fakeRegistry, opts Options, name string, prev []lookup) []lookup {
	fs := New(r.Layers(), opts)
	var out []lookup
	find := func(cands ...string) lookup {
		opens := len(r.read)
		var limits fuzzcheck.Limits
		if len(out) < len(prev) {
			limits.Alloc = findAlloc(fs.opts, prev[len(out)].opens)
		}
		l := lookup{candidates: cands}
		fuzzcheck.Within(t, "layerfs.Find", limits, func() {
			l.file, l.err = fs.Find(context.Background(), cands...)
		})
		l.opens = len(r.read) - opens
		checkFind(t, r, fs, l, opens)
		out = append(out, l)
		return l
	}
	first := find(fuzzCandidates(name)...)
	if first.err == nil {
		if h, err := exechdr.Identify(first.file.Prefix); err == nil && h.Format == exechdr.Script {
			find(h.Interpreter)
			if c := h.EnvCommand(); c != "" {
				find(fuzzCandidates(c)...)
			}
		}
	}
	again := find(first.candidates...)
	var tooLarge *LayerTooLargeError
	if !again.same(first) && !(errors.As(again.err, &tooLarge) && tooLarge.LimitReached == "total") {
		t.Fatalf("the same lookup on the same FS: first %+v, then %+v; only the image's read limit may change an answer", first, again)
	}
	return out
}

// findAlloc bounds what one Find that opens layers opens allocates: a fixed part, and for
// each layer opened its reader's state (bufio, tar, gzip's or zstd's decoder: under 1 MiB
// and zstd's 1 MiB beyond its window), zstd's window (at most what the layer may
// decompress to, uncompressedFactor × MaxLayerBytes, and maxZstdWindow), and 4 times what
// the layer may decompress to (tar reads PAX records and long names into memory, in a
// growing buffer, then copies them; it skips file bodies).
func findAlloc(eff Options, opens int) uint64 {
	u := uint64(eff.MaxLayerBytes) * uncompressedFactor
	perLayer := 2*uint64(fuzzcheck.MiB) + min(u, maxZstdWindow) + 4*u
	return fuzzcheck.MiB + uint64(opens)*perLayer
}

func equalFiles(a, b File) bool {
	return a.Path == b.Path && a.Resolved == b.Resolved && a.Layer == b.Layer && bytes.Equal(a.Prefix, b.Prefix)
}

// checkFind checks one Find's answer and what it read; opens is the count of Opens before it.
func checkFind(t *testing.T, r *fakeRegistry, fs *FS, l lookup, opens int) {
	t.Helper()
	eff, cands, f, err := fs.opts, l.candidates, l.file, l.err
	if r.open != 0 {
		t.Fatalf("Find(%q) left %d layer(s) open", cands, r.open)
	}
	var total int64
	for _, n := range r.read {
		total += n
	}
	if fs.BytesRead() != total {
		t.Fatalf("Find(%q): BytesRead() = %d, but the layers delivered %d bytes", cands, fs.BytesRead(), total)
	}
	if fs.BytesRead() > eff.MaxTotalBytes {
		t.Fatalf("Find(%q): BytesRead() = %d, more than MaxTotalBytes %d (read %v of layers %v, sizes %v)", cands, fs.BytesRead(), eff.MaxTotalBytes, r.read, r.layers, r.sizes)
	}
	for i, n := range r.read[opens:] {
		if l := r.layers[opens+i]; n > r.sizes[l] || n > eff.MaxLayerBytes {
			t.Fatalf("Find(%q): %d bytes read of layer %d, more than its descriptor's size %d or MaxLayerBytes %d", cands, n, l, r.sizes[l], eff.MaxLayerBytes)
		}
	}
	for i, n := range r.opened {
		if n > 0 && r.sizes[i] > eff.MaxLayerBytes {
			t.Fatalf("Find(%q): layer %d opened although its descriptor's size %d is over MaxLayerBytes %d", cands, i, r.sizes[i], eff.MaxLayerBytes)
		}
	}
	var tooLarge *LayerTooLargeError
	switch {
	case err == nil:
		if f.Layer < 0 || f.Layer >= len(r.blobs) {
			t.Fatalf("Find(%q) = %+v: no such layer", cands, f)
		}
		if len(f.Prefix) > PrefixSize {
			t.Fatalf("Find(%q): %d bytes of prefix, more than PrefixSize", cands, len(f.Prefix))
		}
		if !slices.Contains(cands, f.Path) {
			t.Fatalf("Find(%q) = %+v: Path is none of the candidates", cands, f)
		}
		if f.Resolved != clean(f.Resolved) {
			t.Fatalf("Find(%q) = %+v: Resolved is not clean and absolute", cands, f)
		}
	case errors.As(err, &tooLarge):
		if tooLarge.Index < 0 || tooLarge.Index >= len(r.blobs) {
			t.Fatalf("Find(%q): %v: no such layer", cands, err)
		}
		switch tooLarge.LimitReached {
		case "layer":
			if tooLarge.Limit != eff.MaxLayerBytes {
				t.Fatalf("Find(%q): %v: the layer limit is %d", cands, err, eff.MaxLayerBytes)
			}
		case "total":
			if tooLarge.Limit != eff.MaxTotalBytes {
				t.Fatalf("Find(%q): %v: the total limit is %d", cands, err, eff.MaxTotalBytes)
			}
		default:
			t.Fatalf("Find(%q): %v: LimitReached %q", cands, err, tooLarge.LimitReached)
		}
	}
}

// FuzzFind feeds Find one to four layers of any bytes (each as it is, or as a tar the
// target compresses with gzip or zstd), with descriptor sizes that are true or a
// registry's lies, under limits the input chooses, and looks paths up as the --deep
// check does (the entrypoint, a script's interpreter, env's command, the entrypoint
// again). It checks, besides the cost of each Find (fuzzcheck; findAlloc):
//   - BytesRead() is what the layers delivered, never more than MaxTotalBytes; no more
//     of a layer is read than its descriptor's size and MaxLayerBytes; a layer whose
//     descriptor is over MaxLayerBytes is never opened; every layer opened is closed;
//   - a found file is a candidate, in a layer of the image, resolved to a clean absolute
//     path, with at most PrefixSize bytes; a LayerTooLargeError names a layer and the limit
//     in force;
//   - the answers are deterministic (a new FS gives the same), a lookup repeated on the
//     same FS gives the same answer unless the image's read limit is reached in between;
//   - limits refuse, never change an answer: a file found or not found under the input's
//     limits is the answer under limits the input cannot reach.
func FuzzFind(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s.data, s.name, s.wrap, s.sizes, s.limits)
	}
	f.Fuzz(fuzzFind)
}

// fuzzFind is FuzzFind's body.
func fuzzFind(t *testing.T, data []byte, name string, wrap, sizes uint8, limits uint32) {
	blobs := fuzzBlobs(data, wrap)
	opts := fuzzOptions(limits, blobs)
	got := fuzzLookups(t, newFakeRegistry(blobs, sizes, opts), opts, name, nil)
	// Again on a new FS: the same answers, each Find within findAlloc of the layers
	// it opened the first time.
	again := fuzzLookups(t, newFakeRegistry(blobs, sizes, opts), opts, name, got)
	if !slices.EqualFunc(got, again, lookup.same) {
		t.Fatalf("two runs on the same image differ:\n%+v\n%+v", got, again)
	}

	// The same image, the same lies, under limits no fuzz input reaches (it is far
	// smaller than 16 MiB; what it decompresses to under the input's limits, too).
	if !got[0].definite() {
		return
	}
	free := Options{MaxLayerBytes: 16 << 20, MaxHops: opts.MaxHops}
	ref := lookup{candidates: got[0].candidates}
	ref.file, ref.err = New(newFakeRegistry(blobs, sizes, free).Layers(), free).Find(context.Background(), ref.candidates...)
	if !ref.same(got[0]) {
		t.Fatalf("limits changed an answer: under %+v: %+v, %v; under %+v: %+v, %v", opts, got[0].file, got[0].err, free, ref.file, ref.err)
	}
}

type fuzzSeed struct {
	data        []byte
	name        string
	wrap, sizes uint8
	limits      uint32
}

// fuzzSeeds are the layers of the package's tests, each as a blob and as a tar the
// target compresses.
func fuzzSeeds(t testing.TB) []fuzzSeed {
	join := func(blobs ...[]byte) []byte { return bytes.Join(blobs, layerSep) }
	base := tarOf(t,
		entry{"bin -> usr/bin", ""}, entry{"usr/", ""}, entry{"usr/bin/", ""},
		entry{"usr/bin/sh", "ELF-sh"}, entry{"usr/bin/env", "ELF-env"}, entry{"usr/bin/python3 -> python3.12", ""},
		entry{"usr/bin/python3.12", "ELF-python"}, entry{"opt/tool/run", "old"}, entry{"etc/gone", "x"},
		entry{"usr/local/bin/dup", "lower"},
	)
	app := tarOf(t,
		entry{"app/", ""}, entry{"app/server", "ELF-server"}, entry{"app/link -> ../bin/sh", ""},
		entry{"app/hard => usr/bin/env", ""}, entry{"app/loop1 -> loop2", ""}, entry{"app/loop2 -> loop1", ""},
		entry{"opt/tool/.wh..wh..opq", ""}, entry{"opt/tool/new", "new"}, entry{"etc/.wh.gone", ""},
		entry{"usr/bin/dup", "upper"}, entry{"app/run.sh", "#!/usr/bin/env python3\nprint()\n"},
	)
	var seeds []fuzzSeed
	for _, name := range []string{"/app/server", "/bin/sh", "/app/link", "python3", "/app/hard", "dup", "sh",
		"/opt/tool/run", "/opt/tool/new", "/etc/gone", "/nope", "/app/loop1", "/usr/bin", "/app/server/x", "/app/run.sh"} {
		seeds = append(seeds,
			fuzzSeed{join(base, app), name, wrapGzip | wrapGzip<<2, 0, 0},
			fuzzSeed{join(gzipped(t, base), gzipped(t, app)), name, 0, 0, 0},
		)
	}
	seeds = append(seeds,
		fuzzSeed{join(base, app), "/app/loop1", wrapZstd | wrapNone<<2, sizeZero << 2, 3 << 24},
		fuzzSeed{join(base, app), "sh", wrapNone | wrapZstd<<2, sizeHalf << 2, 1024},
		fuzzSeed{join(base, app), "/bin/sh", 0, sizeTooLarge << 2, 2048},
		// Limits at a fraction of the layers: half the largest, half of all.
		fuzzSeed{join(base, app), "sh", 0, 0, 1<<29 | 1<<30 | 0x8000 | 0x80<<16},
		fuzzSeed{join(base, app), "/app/hard", wrapGzip | wrapGzip<<2, sizeHalf | sizeZero<<2, 1<<29 | 1<<30 | 0xc000 | 0xc0<<16},
	)

	// TestFindStopsReading, smaller.
	top := tarOf(t, entry{"app/server", "ELF"}, entry{"app/data", strings.Repeat("x", 8<<10)})
	seeds = append(seeds, fuzzSeed{join(gzipped(t, tarOf(t, entry{"bin/sh", "sh"})), top), "/app/server", 0, 0, 0})

	// TestFindLimits: a lying descriptor, an archive bomb.
	liar := gzipped(t, tarOf(t, entry{"pad", strings.Repeat("y", 64<<10)}, entry{"bin/sh", "sh"}))
	seeds = append(seeds, fuzzSeed{liar, "/bin/sh", 0, sizeZero, 1000})
	bomb := gzipped(t, tarOf(t, entry{"pad", strings.Repeat("\x00", 4<<20)}, entry{"bin/sh", "sh"}))
	seeds = append(seeds, fuzzSeed{bomb, "/bin/sh", 0, 0, uint32(len(bomb) + 10)})

	// TestFindCompressions.
	plain := tarOf(t, entry{"bin/sh", "plain"})
	seeds = append(seeds,
		fuzzSeed{plain, "/bin/sh", 0, 0, 0},
		fuzzSeed{fuzzZstd.EncodeAll(tarOf(t, entry{"bin/sh", "zstd"}), nil), "/bin/sh", 0, 0, 0},
		fuzzSeed{plain, "sh", wrapZstd, 0, 0},
	)

	// TestFindHardLinkBehindPendingCandidate.
	seeds = append(seeds, fuzzSeed{join(
		tarOf(t, entry{"usr/bin/tool", "old"}),
		tarOf(t, entry{"usr/local/bin/.wh.tool", ""}),
		tarOf(t, entry{"opt/real", "new"}, entry{"usr/bin/tool => opt/real", ""}),
	), "tool", wrapGzip | wrapGzip<<2 | wrapGzip<<4, 0, 0})

	// Empty and odd layers.
	seeds = append(seeds,
		fuzzSeed{nil, "sh", 0, 0, 0},
		fuzzSeed{join(nil, plain), "/bin/sh:/usr/bin/sh", wrapGzip, 0, 0},
		fuzzSeed{[]byte{0x1f, 0x8b}, "/bin/sh", 0, 0, 0},
		fuzzSeed{[]byte{0x28, 0xb5, 0x2f, 0xfd}, "/bin/sh", 0, 0, 0},
	)
	return seeds
}
