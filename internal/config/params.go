package config

import (
	"cmp"
	"iter"
	"maps"
	"slices"
)

// Param is one parameter of a health check: its key and its plain value (nil, string, int,
// bool, float64, []any or map[string]any, as the loader reads YAML).
type Param struct {
	Key   string
	Value any
}

// Params are a health check's parameters (`params:`), sorted by key, each key once. A load
// keeps them for every check written inline, tens of thousands in a big zone: a slice of
// pairs is a third of a map's size. Copies of a Params share its pairs, which must not be
// modified; the zero Params has none.
type Params struct {
	kv []Param
}

// NewParams returns the parameters of m (nil or empty: none).
func NewParams(m map[string]any) Params {
	if len(m) == 0 {
		return Params{}
	}
	kv := make([]Param, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, Param{k, m[k]})
	}
	return Params{kv}
}

// Get returns the value of key, and whether the parameters have it.
func (p Params) Get(key string) (any, bool) {
	i, ok := slices.BinarySearchFunc(p.kv, key, func(e Param, k string) int { return cmp.Compare(e.Key, k) })
	if !ok {
		return nil, false
	}
	return p.kv[i].Value, true
}

// Len returns the number of parameters.
func (p Params) Len() int { return len(p.kv) }

// All yields the parameters in the order of their keys.
func (p Params) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, e := range p.kv {
			if !yield(e.Key, e.Value) {
				return
			}
		}
	}
}

// Map returns the parameters as a new map, nil when there are none.
func (p Params) Map() map[string]any {
	if len(p.kv) == 0 {
		return nil
	}
	m := make(map[string]any, len(p.kv))
	for _, e := range p.kv {
		m[e.Key] = e.Value
	}
	return m
}

// Identity tells shared parameters apart: it is the same for the copies of one Params (a
// profile's check, shared by the backends that use it), different for parameters written
// apart, and nil when there are none.
func (p Params) Identity() *Param {
	if len(p.kv) == 0 {
		return nil
	}
	return &p.kv[0]
}

// setParam sets key to v in the sorted pairs kv, replacing the value of a key it has.
func setParam(kv []Param, key string, v any) []Param {
	i, ok := slices.BinarySearchFunc(kv, key, func(e Param, k string) int { return cmp.Compare(e.Key, k) })
	if ok {
		kv[i].Value = v
		return kv
	}
	return slices.Insert(kv, i, Param{key, v})
}
