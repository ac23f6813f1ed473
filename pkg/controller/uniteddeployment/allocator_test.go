package uniteddeployment

import (
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// sub builds a topology entry; replicas is nil, an int or a string ("50%").
func sub(name string, replicas any) appsv1alpha1.Subset {
	s := appsv1alpha1.Subset{Name: name}
	switch r := replicas.(type) {
	case int:
		v := intstr.FromInt32(int32(r))
		s.Replicas = &v
	case string:
		v := intstr.FromString(r)
		s.Replicas = &v
	}
	return s
}

func TestAllocate(t *testing.T) {
	tests := []struct {
		name    string
		total   int32
		subsets []appsv1alpha1.Subset
		current map[string]int32
		want    map[string]int32
		// wantErr is the sum of explicit replicas in the expected *AllocationError (0: no error).
		wantErr int32
	}{
		{
			name:    "even split, remainder to the last in (current, name) order",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", nil), sub("zone-c", nil)},
			want:    map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 4},
		},
		{
			name:    "even split, remainder of two",
			total:   11,
			subsets: []appsv1alpha1.Subset{sub("zone-c", nil), sub("zone-a", nil), sub("zone-b", nil)},
			want:    map[string]int32{"zone-a": 3, "zone-b": 4, "zone-c": 4},
		},
		{
			name:    "exact split",
			total:   9,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", nil), sub("zone-c", nil)},
			want:    map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 3},
		},
		{
			name:    "percentage rounded half up: 50% of 3 is 2",
			total:   3,
			subsets: []appsv1alpha1.Subset{sub("zone-a", "50%"), sub("zone-b", nil)},
			want:    map[string]int32{"zone-a": 2, "zone-b": 1},
		},
		{
			name:    "percentage rounded half up: 25% of 10 is 3, 33% of 10 is 3",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", "25%"), sub("zone-b", "33%"), sub("zone-c", nil)},
			want:    map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 4},
		},
		{
			name:    "percentage rounded down below half: 24% of 10 is 2",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", "24%"), sub("zone-b", nil)},
			want:    map[string]int32{"zone-a": 2, "zone-b": 8},
		},
		{
			name:    "mixed explicit and unspecified: 50%, 3 and the rest",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", "50%"), sub("zone-b", 3), sub("zone-c", nil)},
			want:    map[string]int32{"zone-a": 5, "zone-b": 3, "zone-c": 2},
		},
		{
			name:    "mixed: the rest split among two unspecified with remainder",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", 5), sub("zone-b", nil), sub("zone-c", nil)},
			want:    map[string]int32{"zone-a": 5, "zone-b": 2, "zone-c": 3},
		},
		{
			name:    "numeric string is an integer",
			total:   4,
			subsets: []appsv1alpha1.Subset{sub("zone-a", "1"), sub("zone-b", nil)},
			want:    map[string]int32{"zone-a": 1, "zone-b": 3},
		},
		{
			name:    "all explicit and equal to replicas",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", 5), sub("zone-b", "30%"), sub("zone-c", 2)},
			want:    map[string]int32{"zone-a": 5, "zone-b": 3, "zone-c": 2},
		},
		{
			name:    "explicit sum above replicas is an error",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", 6), sub("zone-b", "50%"), sub("zone-c", nil)},
			wantErr: 11,
		},
		{
			name:    "all explicit and below replicas is an error",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", 3), sub("zone-b", "30%"), sub("zone-c", 3)},
			wantErr: 9,
		},
		{
			name:    "all explicit percentages that round below replicas are an error",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", "33%"), sub("zone-b", "33%"), sub("zone-c", "33%")},
			wantErr: 9,
		},
		{
			name:    "scale down subsets of different sizes: the smallest lose first",
			total:   8,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", nil), sub("zone-c", nil)},
			current: map[string]int32{"zone-a": 4, "zone-b": 3, "zone-c": 3},
			// order (3,b) (3,c) (4,a): base 2, remainder 2 to c and a.
			want: map[string]int32{"zone-a": 3, "zone-b": 2, "zone-c": 3},
		},
		{
			name:    "scale down keeps the biggest subset's extra replica",
			total:   7,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", nil), sub("zone-c", nil)},
			current: map[string]int32{"zone-a": 3, "zone-b": 4, "zone-c": 3},
			want:    map[string]int32{"zone-a": 2, "zone-b": 3, "zone-c": 2},
		},
		{
			name:    "scale up gives the remainder to those holding the most",
			total:   11,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", nil), sub("zone-c", nil)},
			current: map[string]int32{"zone-a": 4, "zone-b": 3, "zone-c": 3},
			want:    map[string]int32{"zone-a": 4, "zone-b": 3, "zone-c": 4},
		},
		{
			name:    "settled uneven split does not move",
			total:   10,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", nil), sub("zone-c", nil)},
			current: map[string]int32{"zone-a": 3, "zone-b": 4, "zone-c": 3},
			want:    map[string]int32{"zone-a": 3, "zone-b": 4, "zone-c": 3},
		},
		{
			name:    "zero replicas",
			total:   0,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", "50%")},
			want:    map[string]int32{"zone-a": 0, "zone-b": 0},
		},
		{
			name:    "fewer replicas than subsets",
			total:   2,
			subsets: []appsv1alpha1.Subset{sub("zone-a", nil), sub("zone-b", nil), sub("zone-c", nil)},
			want:    map[string]int32{"zone-a": 0, "zone-b": 1, "zone-c": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Allocate(tt.total, tt.subsets, tt.current)
			if tt.wantErr != 0 {
				var ae *AllocationError
				if !errors.As(err, &ae) {
					t.Fatalf("want *AllocationError, got %v (allocation %v)", err, got)
				}
				if ae.Explicit != tt.wantErr || ae.Total != tt.total {
					t.Fatalf("error %+v, want explicit %d of %d", ae, tt.wantErr, tt.total)
				}
				if got != nil {
					t.Fatalf("allocation %v returned with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAllocateRefusesMalformedReplicas(t *testing.T) {
	for _, v := range []string{"abc", "101%", "-1", "x%"} {
		if _, err := Allocate(10, []appsv1alpha1.Subset{sub("zone-a", v), sub("zone-b", nil)}, nil); err == nil {
			t.Errorf("replicas %q: want an error", v)
		}
	}
}
