// Package layerfs finds files in an image's stack of layers without extracting it: it
// streams the layers from the top down, as an overlay filesystem would look a path up
// (whiteouts, opaque directories, symbolic and hard links), stops reading a layer once
// the file is found, and keeps only the first bytes of the file. Layers larger than a
// limit are refused without being read.
package layerfs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Defaults for zero Options fields.
const (
	// DefaultMaxLayerBytes is the largest compressed layer read: larger ones are
	// reported, never pulled. Application layers are far smaller; base layers of big
	// distributions (CUDA, full JDKs) may exceed it.
	DefaultMaxLayerBytes = 256 << 20
	// DefaultMaxHops bounds the links followed for one file, as the kernel's 40 for
	// symlinks, but lower: each hop may read the layers again.
	DefaultMaxHops = 16
	// uncompressedFactor bounds what a layer decompresses to, against archive bombs.
	uncompressedFactor = 16
	// maxZstdWindow is the largest zstd window a layer may declare: what zstd itself
	// decompresses without --memory (window log 27, as --long writes), so every layer a
	// zstd tool writes by default.
	maxZstdWindow = 128 << 20
)

// PrefixSize is how much of a found file is kept.
const PrefixSize = 4096

// Layer is one layer of an image.
type Layer struct {
	// Digest and Size are the descriptor's: Size is checked against the limits before
	// anything is read, and no more than Size bytes are read.
	Digest string
	Size   int64
	// Open returns the layer's blob (gzip, zstd or plain tar, told by its first bytes).
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// Options bound an FS.
type Options struct {
	// MaxLayerBytes is the largest compressed layer read; DefaultMaxLayerBytes when zero.
	MaxLayerBytes int64
	// MaxTotalBytes bounds the compressed bytes one FS reads over all lookups; 4 ×
	// MaxLayerBytes when zero.
	MaxTotalBytes int64
	// MaxHops bounds links followed per file; DefaultMaxHops when zero.
	MaxHops int
}

// FS is the merged view of an image's layers, bottom layer first.
type FS struct {
	layers []Layer
	opts   Options
	read   int64
}

// New returns the view of layers, the bottom one first as a manifest lists them.
func New(layers []Layer, opts Options) *FS {
	if opts.MaxLayerBytes <= 0 {
		opts.MaxLayerBytes = DefaultMaxLayerBytes
	}
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = 4 * opts.MaxLayerBytes
	}
	if opts.MaxHops <= 0 {
		opts.MaxHops = DefaultMaxHops
	}
	return &FS{layers: layers, opts: opts}
}

// BytesRead is the compressed bytes read so far.
func (fs *FS) BytesRead() int64 { return fs.read }

// File is a file found in the image.
type File struct {
	// Path is the candidate that was found; Resolved is the file it names once every
	// link is followed.
	Path, Resolved string
	// Layer is the index (bottom layer 0) of the layer holding Resolved.
	Layer int
	// Prefix is the file's first PrefixSize bytes, or all of it when shorter.
	Prefix []byte
}

// ErrNotFound: no candidate exists in the image.
var ErrNotFound = errors.New("not found in the image")

// LayerTooLargeError is a layer that was not read: it is larger than the limit.
type LayerTooLargeError struct {
	Index        int
	Digest       string
	Size, Limit  int64
	LimitReached string // which limit: "layer" or "total"
}

func (e *LayerTooLargeError) Error() string {
	if e.LimitReached == "total" {
		return fmt.Sprintf("layer %d (%s) not read: the %d MiB read limit for the image is reached", e.Index, e.Digest, e.Limit>>20)
	}
	return fmt.Sprintf("layer %d (%s) is %s > limit %s", e.Index, e.Digest, mib(e.Size), mib(e.Limit))
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Find looks candidates (absolute paths, in priority order, as a PATH search tries
// them) up and returns the first that exists, with every link followed from it: a
// symlink as the kernel resolves it (relative to its directory, absolute from the
// image's root), a hard link by its archive path.
func (fs *FS) Find(ctx context.Context, candidates ...string) (File, error) {
	paths := make([]string, len(candidates))
	for i, c := range candidates {
		paths[i] = clean(c)
	}
	start := len(fs.layers) - 1
	var first string
	for hop := 0; ; hop++ {
		if hop > fs.opts.MaxHops {
			return File{}, fmt.Errorf("%s: more than %d links followed", first, fs.opts.MaxHops)
		}
		i, h, layer, err := fs.scan(ctx, start, paths)
		if err != nil {
			return File{}, err
		}
		if hop == 0 {
			first = candidates[i]
		}
		switch h.kind {
		case hitFile:
			return File{Path: first, Resolved: paths[i], Layer: layer, Prefix: h.prefix}, nil
		case hitSymlink:
			paths, start = []string{h.link}, len(fs.layers)-1
		case hitHardlink:
			paths, start = []string{h.link}, layer
		case hitDir:
			return File{}, fmt.Errorf("%s: is a directory", paths[i])
		case hitNotDir:
			return File{}, fmt.Errorf("%s: %s is not a directory", paths[i], h.link)
		default:
			return File{}, fmt.Errorf("%s: not a regular file", paths[i])
		}
	}
}

type hitKind int

const (
	hitNone hitKind = iota
	hitFile
	hitSymlink
	hitHardlink
	hitDir
	hitNotDir
	hitOther
)

type hit struct {
	kind   hitKind
	link   string // the path a link (or a symlink on the way) leads to; the non-directory
	prefix []byte
}

// candidate is one path's lookup state across layers.
type candidate struct {
	path string
	// dirs are the path's ancestors seen as directories in upper layers: a lower
	// layer's symlink or file of that name is hidden.
	dirs    map[string]bool
	gone    bool // hidden (whiteout, opaque directory) or not in any layer
	hit     hit  // found in the current layer
	hidden  bool // a whiteout in the current layer hides the lower layers
	newDirs []string
	layer   int // where hit was found
}

// scan reads the layers from start down until the first candidate (in priority order)
// that is not gone is found; it returns its index, what was found and in which layer.
func (fs *FS) scan(ctx context.Context, start int, paths []string) (int, hit, int, error) {
	cands := make([]*candidate, len(paths))
	for i, p := range paths {
		cands[i] = &candidate{path: p, dirs: map[string]bool{}}
	}
	winner := func() (int, bool) {
		for i, c := range cands {
			if !c.gone {
				return i, c.hit.kind != hitNone
			}
		}
		return -1, false
	}
	for l := start; l >= 0; l-- {
		if err := fs.scanLayer(ctx, l, cands, winner); err != nil {
			return 0, hit{}, 0, err
		}
		for _, c := range cands {
			if c.gone || c.hit.kind != hitNone {
				continue
			}
			if c.hidden {
				c.gone = true
			}
			for _, d := range c.newDirs {
				c.dirs[d] = true
			}
			c.newDirs = nil
		}
		i, found := winner()
		switch {
		case i < 0:
			return 0, hit{}, 0, fmt.Errorf("%s: %w", strings.Join(paths, ", "), ErrNotFound)
		case found:
			return i, cands[i].hit, cands[i].layer, nil
		}
		// A candidate found here behind one still pending keeps its hit: the pending
		// one may be found lower, else this one wins.
	}
	for i, c := range cands {
		if c.hit.kind != hitNone {
			return i, c.hit, c.layer, nil
		}
	}
	return 0, hit{}, 0, fmt.Errorf("%s: %w", strings.Join(paths, ", "), ErrNotFound)
}

func (fs *FS) scanLayer(ctx context.Context, l int, cands []*candidate, winner func() (int, bool)) error {
	layer := fs.layers[l]
	if layer.Size > fs.opts.MaxLayerBytes {
		return &LayerTooLargeError{Index: l, Digest: layer.Digest, Size: layer.Size, Limit: fs.opts.MaxLayerBytes, LimitReached: "layer"}
	}
	if fs.read+layer.Size > fs.opts.MaxTotalBytes {
		return &LayerTooLargeError{Index: l, Digest: layer.Digest, Size: layer.Size, Limit: fs.opts.MaxTotalBytes, LimitReached: "total"}
	}
	for _, c := range cands {
		c.hidden, c.newDirs = false, nil
	}
	rc, err := layer.Open(ctx)
	if err != nil {
		return fmt.Errorf("layer %d (%s): %w", l, layer.Digest, err)
	}
	defer rc.Close()
	// The descriptor's size, checked against both limits above, is all that is read: the
	// blob is not verified against its digest, so bytes a registry sends past that size
	// are not the blob the manifest names, and reading them would break the limits.
	counted := &countingReader{r: io.LimitReader(rc, max(layer.Size, 0))}
	defer func() { fs.read += counted.n }()
	tr, closeTar, err := tarReader(counted, fs.opts.MaxLayerBytes*uncompressedFactor)
	if err != nil {
		return fmt.Errorf("layer %d (%s): %w", l, layer.Digest, err)
	}
	defer closeTar()
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) && counted.n == layer.Size {
				return fmt.Errorf("layer %d (%s): reading the archive: cut at the descriptor's size, %d bytes: %w", l, layer.Digest, layer.Size, err)
			}
			return fmt.Errorf("layer %d (%s): reading the archive: %w", l, layer.Digest, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := clean(hdr.Name)
		dir, base := path.Split(name)
		dir = clean(dir)
		for _, c := range cands {
			if c.gone || c.hit.kind != hitNone {
				continue
			}
			if strings.HasPrefix(base, ".wh.") {
				if base == ".wh..wh..opq" {
					c.hidden = c.hidden || isAncestor(dir, c.path)
				} else if t := path.Join(dir, strings.TrimPrefix(base, ".wh.")); t == c.path || isAncestor(t, c.path) {
					c.hidden = true
				}
				continue
			}
			switch {
			case name == c.path:
				c.layer = l
				c.hit, err = entryHit(hdr, tr, dir)
				if err != nil {
					return fmt.Errorf("layer %d (%s): %s: %w", l, layer.Digest, name, err)
				}
			case isAncestor(name, c.path) && !c.dirs[name]:
				rest := strings.TrimPrefix(c.path, name)
				c.layer = l
				switch hdr.Typeflag {
				case tar.TypeDir:
					c.newDirs = append(c.newDirs, name)
				case tar.TypeSymlink:
					c.hit = hit{kind: hitSymlink, link: clean(linkTarget(dir, hdr.Linkname) + rest)}
				case tar.TypeLink:
					c.hit = hit{kind: hitHardlink, link: clean(clean(hdr.Linkname) + rest)}
				default:
					c.hit = hit{kind: hitNotDir, link: name}
				}
			}
		}
		if _, found := winner(); found {
			return nil
		}
	}
}

func entryHit(hdr *tar.Header, r io.Reader, dir string) (hit, error) {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives still use '\x00'
		buf := make([]byte, min(hdr.Size, PrefixSize))
		if _, err := io.ReadFull(r, buf); err != nil {
			return hit{}, err
		}
		return hit{kind: hitFile, prefix: buf}, nil
	case tar.TypeSymlink:
		return hit{kind: hitSymlink, link: clean(linkTarget(dir, hdr.Linkname))}, nil
	case tar.TypeLink:
		return hit{kind: hitHardlink, link: clean(hdr.Linkname)}, nil
	case tar.TypeDir:
		return hit{kind: hitDir}, nil
	}
	return hit{kind: hitOther}, nil
}

// linkTarget resolves a symlink's target: absolute from the image's root, else
// relative to the link's directory.
func linkTarget(dir, target string) string {
	if strings.HasPrefix(target, "/") {
		return target
	}
	return path.Join(dir, target)
}

// clean makes an archive name or a path absolute and clean: "./usr/bin/" is "/usr/bin";
// ".." never climbs above the root.
func clean(p string) string {
	return path.Clean("/" + strings.TrimPrefix(p, "./"))
}

// isAncestor reports whether dir is a proper ancestor of p.
func isAncestor(dir, p string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// tarReader decompresses r by its magic bytes (gzip, zstd, else plain tar) and bounds
// what it decompresses to.
func tarReader(r io.Reader, maxUncompressed int64) (*tar.Reader, func(), error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(4)
	var (
		dec     io.Reader = br
		closeFn           = func() {}
	)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		dec, closeFn = gz, func() { _ = gz.Close() }
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		// The decoder allocates the window a frame declares (and 1 MiB) before the first
		// block: a 20-byte frame would cost up to its window in memory. No match reaches
		// further back than what the layer may decompress to, so that bounds the window
		// too (a single-segment frame's window is its content size: MaxMemory).
		window := uint64(min(max(maxUncompressed, zstd.MinWindowSize), maxZstdWindow))
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(window), zstd.WithDecoderMaxMemory(window))
		if err != nil {
			return nil, nil, err
		}
		dec, closeFn = zr, zr.Close
	}
	return tar.NewReader(&limitedReader{r: dec, left: maxUncompressed}), closeFn, nil
}

// limitedReader fails, rather than ending quietly, past its limit.
type limitedReader struct {
	r    io.Reader
	left int64
}

var errUncompressedLimit = errors.New("decompresses to more than the limit")

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errUncompressedLimit
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
