package v1alpha1

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestBatchPlanFromBatches(t *testing.T) {
	for _, tc := range []struct {
		replicas, batches int32
		want              []int32
	}{
		{10, 4, []int32{1, 4, 7, 10}}, // the design's example: round(10/4) = 3 (half up)
		{10, 1, []int32{10}},
		{10, 2, []int32{1, 10}},
		{10, 3, []int32{1, 4, 10}},
		{10, 5, []int32{1, 3, 5, 7, 10}},
		{10, 10, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{3, 2, []int32{1, 3}},             // round(1.5) = 2
		{5, 4, []int32{1, 2, 3, 5}},       // round(1.25) = 1
		{9, 6, []int32{1, 3, 5, 7, 9, 9}}, // 1 + 4·2 = 9 reaches replicas before the last batch
		{13, 8, []int32{1, 3, 5, 7, 9, 11, 13, 13}},
		{100, 4, []int32{1, 26, 51, 100}},
		{1, 1, []int32{1}},
		{0, 1, []int32{0}},
		{0, 3, []int32{0, 0, 0}},
	} {
		spec := &CanarySpec{Replicas: tc.replicas, Batches: ptr.To(tc.batches)}
		got, err := CanaryBatchPlan(spec)
		if err != nil {
			t.Errorf("%d replicas in %d batches: %v", tc.replicas, tc.batches, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d replicas in %d batches: got %v, want %v", tc.replicas, tc.batches, got, tc.want)
		}
	}
}

func TestBatchPlanFromBatchSizes(t *testing.T) {
	i, s := intstr.FromInt32, intstr.FromString
	for _, tc := range []struct {
		name     string
		replicas int32
		sizes    []intstr.IntOrString
		want     []int32
	}{
		{"integers", 10, []intstr.IntOrString{i(1), i(5), i(10)}, []int32{1, 5, 10}},
		{"percentages", 10, []intstr.IntOrString{s("10%"), s("50%"), s("100%")}, []int32{1, 5, 10}},
		{"percent rounds half up", 10, []intstr.IntOrString{s("5%"), s("25%"), s("100%")}, []int32{1, 3, 10}},
		{"percent rounds down below half", 10, []intstr.IntOrString{s("14%"), s("100%")}, []int32{1, 10}},
		{"percent of 7", 7, []intstr.IntOrString{s("50%"), s("100%")}, []int32{4, 7}},
		{"small percentage of few replicas", 3, []intstr.IntOrString{s("10%"), s("100%")}, []int32{0, 3}},
		{"mixed", 20, []intstr.IntOrString{i(2), s("50%"), i(20)}, []int32{2, 10, 20}},
		{"capped at replicas, last is all", 4, []intstr.IntOrString{i(2), i(9), i(3)}, []int32{2, 4, 4}},
		{"never decreases", 10, []intstr.IntOrString{i(5), i(3), i(10)}, []int32{5, 5, 10}},
		{"single", 6, []intstr.IntOrString{s("100%")}, []int32{6}},
		{"numeric string", 10, []intstr.IntOrString{s("3"), i(10)}, []int32{3, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanaryBatchPlan(&CanarySpec{Replicas: tc.replicas, BatchSizes: tc.sizes})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBatchPlanRefusesWhatTheSchemaRefuses(t *testing.T) {
	s := intstr.FromString
	for name, spec := range map[string]CanarySpec{
		"neither":          {Replicas: 10},
		"both":             {Replicas: 10, Batches: ptr.To[int32](2), BatchSizes: []intstr.IntOrString{s("100%")}},
		"zero batches":     {Replicas: 10, Batches: ptr.To[int32](0)},
		"bad percentage":   {Replicas: 10, BatchSizes: []intstr.IntOrString{s("150%"), s("100%")}},
		"not a number":     {Replicas: 10, BatchSizes: []intstr.IntOrString{s("half"), s("100%")}},
		"zero pods":        {Replicas: 10, BatchSizes: []intstr.IntOrString{intstr.FromInt32(0), s("100%")}},
		"negative replica": {Replicas: -1, Batches: ptr.To[int32](1)},
	} {
		if got, err := CanaryBatchPlan(&spec); err == nil {
			t.Errorf("%s: got plan %v, want an error", name, got)
		}
	}
}
