package resolver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/archfilter/archfilter/pkg/platform"
)

// maxUnlabelledChildren bounds how many platform-less image entries of an index are
// fetched when the index names no platform at all.
const maxUnlabelledChildren = 4

// walk reads the platforms of one image from one session. It is used by one goroutine.
type walk struct {
	s              *session
	requestTimeout time.Duration
	maxBytes       int64
	maxDescriptors int
	maxDepth       int

	descriptors int
	// onPath holds the digests of the indexes being read, to refuse cycles; done memoises
	// indexes already read, so a diamond costs one fetch.
	onPath map[string]bool
	done   map[string]found
	// collector receives each entry read, for Describe; nil for Resolve.
	collector *manifestCollector
}

// found is what a manifest tells about platforms: a list, or nothing at all (artifacts,
// data-only images, indexes without a runnable entry), which must not constrain.
type found struct {
	platforms []platform.Platform
	none      bool
}

func (f found) set() platform.Set {
	if f.none || len(f.platforms) == 0 {
		return platform.Any()
	}
	return platform.NewSet(f.platforms...)
}

func newWalk(ctx context.Context, s *session, o *Options) *walk {
	return &walk{
		collector:      collectorFrom(ctx),
		s:              s,
		requestTimeout: o.RequestTimeout,
		maxBytes:       o.MaxManifestBytes,
		maxDescriptors: o.MaxDescriptors,
		maxDepth:       o.MaxIndexDepth,
	}
}

func (w *walk) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, w.requestTimeout)
}

// image resolves the manifest identifier names (a tag or a digest) and returns its digest
// and platforms.
func (w *walk) image(ctx context.Context, identifier string) (string, platform.Set, error) {
	w.collector.reset()
	m, err := w.getManifest(ctx, identifier)
	if err != nil {
		return "", platform.Set{}, err
	}
	f, err := w.manifest(ctx, m, 0)
	if err != nil {
		return "", platform.Set{}, err
	}
	return m.digest, f.set(), nil
}

func (w *walk) getManifest(ctx context.Context, identifier string) (*manifest, error) {
	rctx, cancel := w.requestCtx(ctx)
	defer cancel()
	return w.s.getManifest(rctx, identifier, w.maxBytes)
}

func (w *walk) manifest(ctx context.Context, m *manifest, depth int) (found, error) {
	wm, err := decodeManifest(m.body)
	if err != nil {
		return found{}, err
	}
	switch classifyManifest(m.contentType, wm) {
	case kindIndex:
		return w.index(ctx, m.digest, wm, depth)
	case kindImage:
		f, err := w.imageManifest(ctx, wm)
		if err == nil {
			w.recordImage(m.digest, wm, f)
		}
		return f, err
	case kindSchema1:
		if p, ok := schema1Platform(wm); ok {
			w.collector.add(Manifest{Kind: ManifestImage, Digest: m.digest, Platform: p})
			return found{platforms: []platform.Platform{p}}, nil
		}
		w.collector.add(Manifest{Kind: ManifestArtifact, Digest: m.digest})
		return found{none: true}, nil
	case kindArtifact:
		w.collector.add(Manifest{Kind: ManifestArtifact, Digest: m.digest, ArtifactType: wm.ArtifactType})
		return found{none: true}, nil
	}
	return found{}, invalidManifest("%s: unrecognised manifest (Content-Type %q, mediaType %q)", m.digest, m.contentType, wm.MediaType)
}

// index collects the platforms of an index's entries. Entries that carry a platform are
// believed without fetching them, which also makes a sparse mirror, lacking some children,
// answer for every platform the index lists. Attestations are skipped; platform-less
// nested indexes are read recursively.
func (w *walk) index(ctx context.Context, digest string, wm *wireManifest, depth int) (found, error) {
	w.descriptors += len(wm.Manifests)
	if w.descriptors > w.maxDescriptors {
		return found{}, invalidManifest("more than %d index entries", w.maxDescriptors)
	}
	if w.onPath == nil {
		w.onPath, w.done = map[string]bool{}, map[string]found{}
	}
	w.onPath[digest] = true
	defer delete(w.onPath, digest)

	var out found
	var unlabelled []string
	for i := range wm.Manifests {
		d := &wm.Manifests[i]
		switch {
		case isAttestation(d):
			w.collector.add(Manifest{Kind: ManifestAttestation, Digest: d.Digest, Refers: d.Annotations[referenceDigestAnnotation]})
		case d.Platform != nil && d.Platform.OS != "" && d.Platform.Architecture != "":
			out.platforms = append(out.platforms, d.Platform.platform())
			w.collector.add(Manifest{Kind: ManifestImage, Digest: d.Digest, Platform: d.Platform.platform(), FromIndex: true})
		case kindOfMediaType(d.MediaType) == kindIndex:
			sub, err := w.child(ctx, d.Digest, depth+1)
			if err != nil {
				return found{}, err
			}
			out.platforms = append(out.platforms, sub.platforms...)
		case kindOfMediaType(d.MediaType) == kindImage && d.ArtifactType == "":
			unlabelled = append(unlabelled, d.Digest)
		case d.ArtifactType != "":
			w.collector.add(Manifest{Kind: ManifestArtifact, Digest: d.Digest, ArtifactType: d.ArtifactType})
		}
	}
	if len(out.platforms) > 0 {
		return out, nil
	}
	// An index that names no platform: some tools write single-image indexes without
	// one. Read a few of those images rather than guess.
	for i, d := range unlabelled {
		if i == maxUnlabelledChildren {
			break
		}
		sub, err := w.child(ctx, d, depth+1)
		if err != nil {
			return found{}, err
		}
		out.platforms = append(out.platforms, sub.platforms...)
	}
	if len(out.platforms) == 0 {
		out.none = true
	}
	return out, nil
}

func (w *walk) child(ctx context.Context, digest string, depth int) (found, error) {
	if depth > w.maxDepth {
		return found{}, invalidManifest("indexes nested deeper than %d", w.maxDepth)
	}
	if w.onPath[digest] {
		return found{}, invalidManifest("index cycle through %s", digest)
	}
	if f, ok := w.done[digest]; ok {
		return f, nil
	}
	if !validDigest(digest) {
		return found{}, invalidManifest("index entry with invalid digest %q", digest)
	}
	m, err := w.getManifest(ctx, digest)
	if err != nil {
		return found{}, err
	}
	f, err := w.manifest(ctx, m, depth)
	if err != nil {
		return found{}, err
	}
	w.done[digest] = f
	return f, nil
}

// recordImage tells the collector what an image manifest turned out to be.
func (w *walk) recordImage(digest string, wm *wireManifest, f found) {
	if w.collector == nil {
		return
	}
	if len(f.platforms) == 0 {
		typ := wm.ArtifactType
		if typ == "" && wm.Config != nil {
			typ = wm.Config.MediaType
		}
		w.collector.add(Manifest{Kind: ManifestArtifact, Digest: digest, ArtifactType: typ})
		return
	}
	w.collector.add(Manifest{Kind: ManifestImage, Digest: digest, Platform: f.platforms[0]})
}

// imageManifest reads a single-platform image's platform from its config blob.
func (w *walk) imageManifest(ctx context.Context, wm *wireManifest) (found, error) {
	if isArtifactManifest(wm) {
		return found{none: true}, nil
	}
	if !validDigest(wm.Config.Digest) {
		return found{}, invalidManifest("config with invalid digest %q", wm.Config.Digest)
	}
	rctx, cancel := w.requestCtx(ctx)
	defer cancel()
	body, err := w.s.getBlob(rctx, wm.Config.Digest, w.maxBytes)
	if err != nil {
		return found{}, err
	}
	var cfg wirePlatform
	if err := json.Unmarshal(body, &cfg); err != nil {
		return found{}, invalidManifest("decoding config %s: %v", wm.Config.Digest, err)
	}
	if cfg.Architecture == "" {
		// A config without an architecture is data, not something a node runs.
		return found{none: true}, nil
	}
	if cfg.OS == "" {
		cfg.OS = "linux"
	}
	return found{platforms: []platform.Platform{cfg.platform()}}, nil
}
