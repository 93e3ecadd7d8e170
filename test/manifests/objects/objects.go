// Package objects reads Kubernetes objects from YAML the way the manifest
// tests need: streams split into documents, client-go's kinds decoded
// strictly, objects named and filtered by type. It needs no scheduler code, so
// the chart's tests (a module of their own) use it too.
package objects

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// strict decodes client-go's kinds (core, apps, rbac, ...) rejecting unknown
// and duplicate fields.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// Documents splits a YAML stream into its documents, dropping empty ones
// (only comments or whitespace).
func Documents(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return nil, err
		}
		if v != nil {
			docs = append(docs, doc)
		}
	}
}

// Kind reads a document's apiVersion and kind.
func Kind(doc []byte) (metav1.TypeMeta, error) {
	var tm metav1.TypeMeta
	err := yaml.Unmarshal(doc, &tm)
	return tm, err
}

// DecodeStrict decodes one document strictly into client-go's typed object;
// a kind client-go does not know is an error, but for a
// CustomResourceDefinition (archfilter's own), read as an unstructured object:
// the API server validates its schema when the tests apply it.
func DecodeStrict(doc []byte) (k8sruntime.Object, error) {
	if tm, err := Kind(doc); err == nil && tm.APIVersion == "apiextensions.k8s.io/v1" && tm.Kind == "CustomResourceDefinition" {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		return u, nil
	}
	obj, _, err := strict.Decode(doc, nil, nil)
	return obj, err
}

// Decode decodes every document of a YAML stream with DecodeStrict.
func Decode(data []byte) ([]k8sruntime.Object, error) {
	docs, err := Documents(data)
	if err != nil {
		return nil, err
	}
	var objs []k8sruntime.Object
	for i, doc := range docs {
		obj, err := DecodeStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// ID names an object: "Kind namespace/name" (cluster-scoped: "Kind name").
func ID(o k8sruntime.Object) string {
	m, err := meta.Accessor(o)
	if err != nil {
		return fmt.Sprintf("%T", o)
	}
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if m.GetNamespace() == "" {
		return kind + " " + m.GetName()
	}
	return kind + " " + m.GetNamespace() + "/" + m.GetName()
}

// Of returns the objects of type T.
func Of[T k8sruntime.Object](objs []k8sruntime.Object) []T {
	var out []T
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
