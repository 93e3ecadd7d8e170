package kubectlplugin

import (
	"context"
	"fmt"
	"sync"

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
	// Digest is the manifest (index or image) the answer was read from.
	Digest string `json:"digest,omitempty"`
	setView
	Error string `json:"error,omitempty"`
}

func newInspectCommand(kube *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var (
		reg    registryFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "inspect IMAGE...",
		Short: "Show the platforms each image runs on, read from its registry manifest",
		Long: `Show the platforms (os/architecture/variant, os.version for Windows) each image runs
on, and the digest of the manifest they were read from. Attestation manifests and
unknown/unknown entries of an index are not platforms and are left out; an OCI
artifact or data-only image shows "any".`,
		Example: `  kubectl archfilter inspect nginx:1.27 registry.example.com/app:v1
  kubectl archfilter inspect --insecure-registry localhost:5000 localhost:5000/app:dev -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, outputTable, outputJSON, outputYAML); err != nil {
				return err
			}
			s, err := reg.newSession(cmd.Context(), connector(kube))
			if err != nil {
				return &ExitError{Code: ExitInputError, Msg: err.Error()}
			}
			for _, p := range s.problems {
				writeLine(streams.ErrOut, "warning: credentials: %s", p)
			}
			views := imageViews(args, resolveAll(cmd.Context(), s, args))
			return printImages(streams, outputFormat(output), views)
		},
	}
	reg.add(cmd)
	addOutputFlag(cmd, &output, outputTable, outputJSON, outputYAML)
	return cmd
}

// resolveAll resolves the distinct images concurrently, at most maxConcurrentImages at a
// time.
func resolveAll(ctx context.Context, s *session, images []string) map[string]resolver.Result {
	results := make(map[string]resolver.Result, len(images))
	var (
		mu sync.Mutex
		g  errgroup.Group
	)
	g.SetLimit(maxConcurrentImages)
	for _, image := range images {
		g.Go(func() error {
			res := s.resolve(ctx, image)
			mu.Lock()
			results[image] = res
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return results
}

func imageViews(images []string, results map[string]resolver.Result) []imageView {
	views := make([]imageView, len(images))
	for i, image := range images {
		res := results[image]
		views[i] = imageView{Image: image, Digest: res.Digest}
		if res.Err != nil {
			views[i].Error = res.Err.Error()
		} else {
			views[i].setView = viewOf(res.Platforms)
		}
	}
	return views
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
		fmt.Fprintln(tw, "IMAGE\tPLATFORM\tOS.VERSION\tDIGEST")
		for _, v := range views {
			switch {
			case v.Error != "":
				fmt.Fprintf(tw, "%s\t<error>\t\t%s\n", v.Image, v.Digest)
			case v.Any:
				fmt.Fprintf(tw, "%s\tany (artifact or data-only)\t\t%s\n", v.Image, v.Digest)
			default:
				for _, p := range v.Platforms {
					name := platform.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}.String()
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Image, name, p.OSVersion, v.Digest)
				}
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else if err := writeStructured(streams.Out, format, map[string]any{"images": views}); err != nil {
		return err
	}
	if failed > 0 {
		return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("%d of %d images could not be resolved", failed, len(views))}
	}
	return nil
}
