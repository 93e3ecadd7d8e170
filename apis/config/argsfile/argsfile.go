// Package argsfile reads ArchFilterArgs from a file of their own, for the
// front-ends that are not a scheduler profile (the placement mode, kubectl
// archfilter): strictly (an unknown field is an error), with the v1 defaults
// applied, and validated as the plugin validates them, so that every
// front-end reads the same arguments the same way.
package argsfile

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archfilter/archfilter/apis/config"
	configv1 "github.com/archfilter/archfilter/apis/config/v1"
	"github.com/archfilter/archfilter/apis/config/validation"
)

// header is an empty ArchFilterArgs document: the defaults.
const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: ArchFilterArgs\n"

var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	utilruntime.Must(config.AddToScheme(s))
	utilruntime.Must(configv1.AddToScheme(s))
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// Load reads the ArchFilterArgs document at path ("" for the defaults), lets edit
// (may be nil) add what the caller's own flags say, and validates the result;
// errors name flag, the file and the field's path under "args".
func Load(flag, path string, edit func(*config.ArchFilterArgs)) (*config.ArchFilterArgs, error) {
	data := []byte(header)
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	return Parse(flag, path, data, edit)
}

// Parse reads an ArchFilterArgs document as Load does; flag and path name
// where it came from in errors.
func Parse(flag, path string, data []byte, edit func(*config.ArchFilterArgs)) (*config.ArchFilterArgs, error) {
	obj, gvk, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	args, ok := obj.(*config.ArchFilterArgs)
	if !ok {
		return nil, fmt.Errorf("%s %s: got %v, want kind ArchFilterArgs", flag, path, gvk)
	}
	if edit != nil {
		edit(args)
	}
	if err := validation.ValidateArchFilterArgs(field.NewPath("args"), args); err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return args, nil
}
