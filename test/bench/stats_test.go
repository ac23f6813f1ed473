package bench

import (
	"testing"
	"time"
)

func TestDurations(t *testing.T) {
	ms := func(v ...int) Durations {
		var d Durations
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, tc := range []struct {
		in               Durations
		median, p90, max time.Duration
	}{
		{nil, 0, 0, 0},
		{ms(5), 5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},
		{ms(4, 1, 3, 2), 2500 * time.Microsecond, 4 * time.Millisecond, 4 * time.Millisecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 5500 * time.Microsecond, 9 * time.Millisecond, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 100), 10500 * time.Microsecond, 18 * time.Millisecond, 100 * time.Millisecond},
	} {
		if got := tc.in.Median(); got != tc.median {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.median)
		}
		if got := tc.in.Percentile(90); got != tc.p90 {
			t.Errorf("Percentile(%v, 90) = %v, want %v", tc.in, got, tc.p90)
		}
		if got := tc.in.Max(); got != tc.max {
			t.Errorf("Max(%v) = %v, want %v", tc.in, got, tc.max)
		}
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(3, 2); got != "1.50" {
		t.Errorf("Ratio(3, 2) = %q", got)
	}
	if got := Ratio(1, 0); got != "n/a" {
		t.Errorf("Ratio(1, 0) = %q", got)
	}
}

func TestMedianOf(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{1.4}, 1.4}, {[]float64{1.7, 0.9, 1.2}, 1.2}, {[]float64{2, 1, 4, 3}, 2.5}} {
		if got := medianOf(c.in); got != c.want {
			t.Errorf("medianOf(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
