package kubectlplugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// maxConcurrentImages bounds the resolutions one command runs at a time.
const maxConcurrentImages = 8

// imageView is what inspect prints for one image.
type imageView struct {
	Image string `json:"image"`
	// Digest is the manifest (index or image) the reference names.
	Digest string `json:"digest,omitempty"`
	setView
	// Manifests are the entries the platforms were read from, each with its own digest;
	// attestations and artifacts are marked as such.
	Manifests []manifestView `json:"manifests,omitempty"`
	Error     string         `json:"error,omitempty"`
	// Binaries are --deep's checks, one per platform.
	Binaries []binaryCheck `json:"binaries,omitempty"`
	// Configs are the config checks, one per platform an index claims.
	Configs []configCheck `json:"configs,omitempty"`
}

// manifestView is one entry of an image's manifest tree.
type manifestView struct {
	Kind     resolver.ManifestKind `json:"kind"`
	Digest   string                `json:"digest"`
	Platform *platformView         `json:"platform,omitempty"`
	// ArtifactType is an artifact's type (or its config's media type).
	ArtifactType string `json:"artifactType,omitempty"`
	// Refers is the digest of the image entry an attestation describes.
	Refers string `json:"refers,omitempty"`
}

func newInspectCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		reg     registryFlags
		deep    deepFlags
		configs configFlags
		output  string
	)
	cmd := &cobra.Command{
		Use:   "inspect IMAGE...",
		Short: "Show the platforms each image runs on, read from its registry manifest",
		Long: `Show the platforms (os/architecture/variant, os.version for Windows) each image runs
on, with the digest of each platform's manifest and of the index that lists them.
Attestation manifests (unknown/unknown entries of an index, e.g. buildx provenance)
and OCI artifacts are listed as such: they are not platforms, and an image that is
only an artifact or data (a Helm chart, a wasm module) runs "any"where.

Each platform an index lists has its config read (its manifest, then its config blob)
and the config's os/architecture/variant compared with what the index claims:
containerd 2.2 does not unpack an entry whose config names another architecture.
Only the checks that fail or could not be answered are printed in the table; -o json
and yaml carry them all. --check-config=false reads the index only.

With --deep, each platform's executable (the entrypoint, found through PATH, and a
script's interpreter) is read from the image's layers and its header (ELF, PE,
Mach-O) compared with the platform the manifest claims.

Exit status: 2 when an image could not be resolved (its error is printed, the other
images are still listed), a platform's config could not be read (over the size limit,
refused by the registry) or --deep could not read an executable; else 1 when a config
contradicts its index entry, or --deep finds a binary that contradicts its manifest or
an entrypoint missing from the image; 0 otherwise.`,
		Example: `  kubectl archfilter inspect nginx:1.27 registry.example.com/app:v1
  kubectl archfilter inspect --insecure-registry localhost:5000 localhost:5000/app:dev -o json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("inspect needs the images to inspect: kubectl archfilter inspect IMAGE..., e.g. kubectl archfilter inspect nginx:1.27")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			if err := deep.parse(); err != nil {
				return err
			}
			s, err := reg.newSession(cmd.Context(), connector(kube))
			if err != nil {
				return &ExitError{Code: ExitInputError, Msg: err.Error()}
			}
			for _, p := range s.problems {
				writeLine(streams.ErrOut, "warning: credentials: %s", p)
			}
			views := concurrently(args, func(image string) imageView {
				req := resolver.Request{Image: image, Credentials: s.credentials}
				v, d := describeImage(cmd.Context(), s, image)
				if v.Error != "" {
					return v
				}
				if configs.enabled {
					v.Configs = checkConfigs(cmd.Context(), s, req, d)
				}
				if deep.enabled {
					v.Binaries = checkBinaries(cmd.Context(), s, req, containerCommand{}, deep.limit)
				}
				return v
			})
			return printImages(streams, outputFormat(output), views)
		},
	}
	reg.add(cmd)
	configs.add(cmd)
	deep.add(cmd)
	addOutputFlag(cmd, &output, outputTable, outputJSON, outputYAML)
	return cmd
}

// resolveAll resolves the distinct images concurrently, at most maxConcurrentImages at a
// time.
func resolveAll(ctx context.Context, s *session, images []string) map[string]resolver.Result {
	results := concurrently(images, func(image string) resolver.Result { return s.resolve(ctx, image) })
	byImage := make(map[string]resolver.Result, len(images))
	for i, image := range images {
		byImage[image] = results[i]
	}
	return byImage
}

// concurrently calls fn for each item, at most maxConcurrentImages at a time, and
// returns the answers in the items' order.
func concurrently[I, T any](items []I, fn func(I) T) []T {
	out := make([]T, len(items))
	var g errgroup.Group
	g.SetLimit(maxConcurrentImages)
	for i, item := range items {
		g.Go(func() error {
			out[i] = fn(item)
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// describeImage is the view of image, and the description it was made from.
func describeImage(ctx context.Context, s *session, image string) (imageView, resolver.Description) {
	d, err := s.describe(ctx, image)
	if err != nil {
		return imageView{Image: image, Error: err.Error()}, d
	}
	v := imageView{Image: image, Digest: d.Digest, setView: viewOf(d.Platforms)}
	for _, m := range d.Manifests {
		mv := manifestView{Kind: m.Kind, Digest: m.Digest, ArtifactType: m.ArtifactType, Refers: m.Refers}
		if m.Kind == resolver.ManifestImage {
			p := platformViewOf(m.Platform)
			mv.Platform = &p
		}
		v.Manifests = append(v.Manifests, mv)
	}
	return v, d
}

func printImages(streams genericiooptions.IOStreams, format outputFormat, views []imageView) error {
	failed := 0
	for _, v := range views {
		if v.Error != "" {
			failed++
			writeLine(streams.ErrOut, "error: %s", v.Error)
		}
	}
	if format == outputTable {
		tw := newTable(streams.Out)
		fmt.Fprintln(tw, "IMAGE\tENTRY\tPLATFORM\tOS.VERSION\tDIGEST")
		for _, v := range views {
			if v.Error != "" {
				fmt.Fprintf(tw, "%s\t<error>\t\t\t\n", v.Image)
				continue
			}
			if len(v.Manifests) != 1 || v.Manifests[0].Digest != v.Digest {
				fmt.Fprintf(tw, "%s\tindex\t%s\t\t%s\n", v.Image, v.setView, v.Digest)
			}
			for _, m := range v.Manifests {
				var name, osVersion string
				switch m.Kind {
				case resolver.ManifestImage:
					name = platform.Platform{OS: m.Platform.OS, Architecture: m.Platform.Architecture, Variant: m.Platform.Variant}.String()
					osVersion = m.Platform.OSVersion
				case resolver.ManifestAttestation:
					name = "of " + shortDigest(m.Refers)
				case resolver.ManifestArtifact:
					name = "any (artifact)"
					if m.ArtifactType != "" {
						name = "any (" + m.ArtifactType + ")"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Image, m.Kind, name, osVersion, m.Digest)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		var configs []configCheck
		for _, v := range views {
			configs = append(configs, v.Configs...)
		}
		if err := printConfigs(streams.Out, configs, false); err != nil {
			return err
		}
		if err := printImageBinaries(streams.Out, views); err != nil {
			return err
		}
	} else if err := writeStructured(streams.Out, format, map[string]any{"images": views}); err != nil {
		return err
	}
	if failed > 0 {
		return &ExitError{Code: ExitInputError, Msg: fmt.Sprintf("%d of %d images could not be resolved", failed, len(views))}
	}
	return imageFindingsStatus(views)
}
