package kubectlplugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/archfilter/archfilter/internal/exechdr"
	"github.com/archfilter/archfilter/internal/layerfs"
	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Results of a binary check (binaryCheck.Result), documented in docs/kubectl-plugin.md.
const (
	// binaryOK: the executable's header matches the platform the manifest claims.
	binaryOK = "ok"
	// binaryMismatch: the header names another architecture or OS: the image lies.
	binaryMismatch = "mismatch"
	// binaryMissing: the entrypoint, or a script's interpreter, is not in the image.
	binaryMissing = "missing"
	// binaryNoEntrypoint: the image has neither Entrypoint nor Cmd (nor the pod a
	// command): nothing to check.
	binaryNoEntrypoint = "noEntrypoint"
	// binaryUnrecognised: the file is neither ELF, PE, Mach-O nor a #! script.
	binaryUnrecognised = "unrecognised"
	// binaryNotChecked: the image or a layer could not be read (auth, a layer over
	// --max-layer-size, a registry error): the answer is unknown.
	binaryNotChecked = "notChecked"
)

// defaultPath is the PATH the runtime sets when an image's config has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// maxInterpreterHops bounds the chain script → interpreter (→ env's command).
const maxInterpreterHops = 4

// deepTimeout bounds the check of one platform of one image: manifests, config and
// the layer reads.
const deepTimeout = 2 * time.Minute

// deepFlags are --deep and its limit, for check and inspect.
type deepFlags struct {
	enabled  bool
	maxLayer string
	limit    int64
}

func (d *deepFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&d.enabled, "deep", false, "also read, for each platform, the executable the image starts (entrypoint, command, a script's interpreter) from its layers and check its header (ELF, PE, Mach-O) against the platform the manifest claims")
	cmd.Flags().StringVar(&d.maxLayer, "max-layer-size", "256Mi", "with --deep, the largest compressed layer read: a larger one is reported as not checked, never pulled")
}

func (d *deepFlags) parse() error {
	if !d.enabled {
		return nil
	}
	q, err := resource.ParseQuantity(d.maxLayer)
	if err != nil || q.Value() <= 0 {
		return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("--max-layer-size %q: want a size such as 256Mi", d.maxLayer)}
	}
	d.limit = q.Value()
	return nil
}

// binaryCheck is what --deep found for one platform of one image (and, for check, one
// container: the pod's command replaces the image's entrypoint).
type binaryCheck struct {
	// Workload and Container are set by check: "Deployment/shop/web", "app".
	Workload  string `json:"workload,omitempty"`
	Container string `json:"container,omitempty"`
	Image     string `json:"image"`
	// Platform is what the manifest claims; Digest is that platform's manifest.
	Platform string `json:"platform"`
	Digest   string `json:"digest,omitempty"`
	// Executable is the file the container starts, as the entrypoint names it after a
	// PATH search; Chain is each file read, from the executable to the binary that
	// runs it ("/app/run.sh: script for /bin/sh", "/bin/sh -> /usr/bin/dash: x86-64 binary").
	Executable string   `json:"executable,omitempty"`
	Chain      []string `json:"chain,omitempty"`
	// Binary is the header of the binary that runs (the interpreter, for a script), and
	// BinaryPlatform its os/arch ("linux" is assumed for ELF).
	Binary         string `json:"binary,omitempty"`
	BinaryPlatform string `json:"binaryPlatform,omitempty"`
	// Result is one of ok, mismatch, missing, noEntrypoint, unrecognised, notChecked.
	Result  string `json:"result"`
	Message string `json:"message"`
}

// failed: the image cannot run as it claims.
func (b binaryCheck) failed() bool {
	return b.Result == binaryMismatch || b.Result == binaryMissing
}

// containerCommand is a pod's command and args, which replace the image's Entrypoint
// and Cmd as the kubelet does.
type containerCommand struct {
	Command, Args []string
}

// argv0 is the program the container starts.
func (c containerCommand) argv0(cfg v1.Config) string {
	argv := append(append([]string{}, cfg.Entrypoint...), cfg.Cmd...)
	switch {
	case len(c.Command) > 0:
		argv = c.Command
	case len(c.Args) > 0:
		argv = append(append([]string{}, cfg.Entrypoint...), c.Args...)
	}
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}

// checkBinaries checks every platform of image.
func checkBinaries(ctx context.Context, s *session, req resolver.Request, cc containerCommand, limit int64) []binaryCheck {
	notChecked := func(msg string) []binaryCheck {
		return []binaryCheck{{Image: req.Image, Result: binaryNotChecked, Message: "not checked: " + msg}}
	}
	d, err := s.resolver.Describe(ctx, req)
	if err != nil {
		return notChecked(shortError(err) + ": " + err.Error())
	}
	repo, err := s.resolver.OpenRepository(ctx, req)
	if err != nil {
		return notChecked(shortError(err) + ": " + err.Error())
	}
	var out []binaryCheck
	for _, m := range d.Manifests {
		if m.Kind != resolver.ManifestImage {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, deepTimeout)
		b := checkPlatform(pctx, repo, m, cc, limit)
		cancel()
		b.Image = req.Image
		out = append(out, b)
	}
	if len(out) == 0 {
		out = append(out, binaryCheck{Image: req.Image, Result: binaryNoEntrypoint, Message: "no platform to check: an artifact or data-only image"})
	}
	return out
}

// checkPlatform reads one platform's config, finds the executable and compares its
// header with the platform.
func checkPlatform(ctx context.Context, repo *resolver.Repository, m resolver.Manifest, cc containerCommand, limit int64) binaryCheck {
	claimed := m.Platform
	b := binaryCheck{Platform: claimed.String(), Digest: m.Digest}
	notChecked := func(format string, args ...any) binaryCheck {
		b.Result, b.Message = binaryNotChecked, b.Platform+": not checked: "+fmt.Sprintf(format, args...)
		return b
	}
	raw, err := repo.Manifest(ctx, m.Digest)
	if err != nil {
		return notChecked("%s", err)
	}
	manifest, err := v1.ParseManifest(bytes.NewReader(raw.Body))
	if err != nil {
		return notChecked("manifest %s: %v", m.Digest, err)
	}
	cfgBody, err := repo.Config(ctx, manifest.Config.Digest.String())
	if err != nil {
		return notChecked("%s", err)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(cfgBody))
	if err != nil {
		return notChecked("config %s: %v", manifest.Config.Digest, err)
	}
	argv0 := cc.argv0(cfg.Config)
	if argv0 == "" {
		b.Result, b.Message = binaryNoEntrypoint, b.Platform+": no entrypoint to check"
		return b
	}
	layers := make([]layerfs.Layer, len(manifest.Layers))
	for i, l := range manifest.Layers {
		digest := l.Digest.String()
		layers[i] = layerfs.Layer{Digest: digest, Size: l.Size, Open: func(ctx context.Context) (io.ReadCloser, error) {
			return repo.OpenBlob(ctx, digest)
		}}
	}
	fs := layerfs.New(layers, layerfs.Options{MaxLayerBytes: limit})
	pathList := pathOf(cfg.Config.Env)
	b.Executable = argv0
	lookup := candidates(argv0, cfg.Config.WorkingDir, pathList)
	what := "entrypoint " + argv0
	// envCommand is what a "#!/usr/bin/env NAME" script runs once env itself is checked.
	var envCommand, envScript string
	for hop := 0; ; hop++ {
		if hop == maxInterpreterHops {
			return notChecked("more than %d interpreters from %s", maxInterpreterHops, argv0)
		}
		f, err := fs.Find(ctx, lookup...)
		var tooLarge *layerfs.LayerTooLargeError
		switch {
		case errors.As(err, &tooLarge):
			return notChecked("looking for %s: %v", what, err)
		case errors.Is(err, layerfs.ErrNotFound):
			b.Result, b.Message = binaryMissing, fmt.Sprintf("%s manifest: %s is not in the image", b.Platform, what)
			return b
		case err != nil:
			return notChecked("looking for %s: %v", what, err)
		}
		if hop == 0 {
			b.Executable = f.Path
		}
		name := f.Path
		if f.Resolved != f.Path {
			name += " -> " + f.Resolved
		}
		h, err := exechdr.Identify(f.Prefix)
		if err != nil {
			b.Chain = append(b.Chain, name+": "+err.Error())
			b.Result, b.Message = binaryUnrecognised, fmt.Sprintf("%s manifest, %s: %v", b.Platform, name, err)
			return b
		}
		b.Chain = append(b.Chain, name+": "+h.String())
		switch h.Format {
		case exechdr.Unknown:
			b.Result, b.Message = binaryUnrecognised, fmt.Sprintf("%s manifest, %s (%s): neither ELF, PE, Mach-O nor a #! script", b.Platform, h, name)
			return b
		case exechdr.Script:
			what = "interpreter " + h.Interpreter + " of " + f.Path
			lookup = []string{h.Interpreter}
			if !strings.HasPrefix(h.Interpreter, "/") {
				lookup = candidates(h.Interpreter, path.Dir(f.Resolved), pathList)
			}
			envCommand, envScript = h.EnvCommand(), f.Path
			continue
		}
		b.Binary, b.BinaryPlatform = h.String(), binaryPlatform(h)
		if !headerMatches(h, claimed) {
			b.Result, b.Message = binaryMismatch, fmt.Sprintf("%s manifest, %s (%s)", b.Platform, h, name)
			return b
		}
		if envCommand != "" {
			// env matches: the command it runs is the script's real interpreter.
			what = "interpreter " + envCommand + " of " + envScript + " (through env)"
			lookup = candidates(envCommand, "/", pathList)
			envCommand = ""
			continue
		}
		b.Result, b.Message = binaryOK, fmt.Sprintf("%s manifest, %s (%s)", b.Platform, h, name)
		return b
	}
}

// candidates are the paths argv0 may name: itself when absolute, relative to dir when
// it has a slash, else each directory of PATH in order, as execvp searches.
func candidates(argv0, dir string, pathList []string) []string {
	switch {
	case strings.HasPrefix(argv0, "/"):
		return []string{argv0}
	case strings.Contains(argv0, "/"):
		return []string{path.Join("/", dir, argv0)}
	}
	out := make([]string, 0, len(pathList))
	for _, d := range pathList {
		if strings.HasPrefix(d, "/") {
			out = append(out, path.Join(d, argv0))
		}
	}
	return out
}

// pathOf is the PATH of an image's environment, or the runtime's default.
func pathOf(env []string) []string {
	p := defaultPath
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			p = v
		}
	}
	return strings.Split(p, ":")
}

// binaryPlatform is the header's os/arch, "linux" assumed for ELF (whose OS/ABI byte
// most toolchains leave at System V).
func binaryPlatform(h exechdr.Header) string {
	osName := h.OS
	if osName == "" {
		osName = "linux"
	}
	if h.Arch == "" {
		return osName
	}
	return osName + "/" + h.Arch
}

// headerMatches reports whether a binary of header h runs as the claimed platform: the
// same architecture (the variant is not in headers) and OS (ELF runs on any non-Windows,
// non-Darwin OS a manifest names).
func headerMatches(h exechdr.Header, claimed platform.Platform) bool {
	want := platform.Normalize(claimed)
	switch h.Format {
	case exechdr.PE:
		if want.OS != "windows" {
			return false
		}
	case exechdr.MachO:
		if want.OS != "darwin" {
			return false
		}
	case exechdr.ELF:
		if want.OS == "windows" || want.OS == "darwin" || (h.OS != "" && h.OS != want.OS) {
			return false
		}
	}
	return h.Arch != "" && h.Arch == want.Architecture
}
