package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Param is one DSN parameter a backend takes: the names it answers to and
// what a value does. The first name is the one the list of known
// parameters shows; the others are other spellings of the same setting,
// such as a Perl DBD driver's, so a MogileFS db_dsn keeps working.
type Param struct {
	Names []string
	// Set takes the value; its error says what is wrong with it (the
	// DSN's parameter and value are put before it).
	Set func(v string) error
}

// ApplyParams hands each of d's Params to the one of params that answers to
// its name, compared without regard to case, so that every backend reads
// its parameters by one set of rules. It fails with ErrBadDSN, naming
// backend, on a name none answers to (listing the known ones), on a
// setting given more than once (twice under one name, or under two of its
// names), and on a value Set refuses. Params are applied in name order,
// so the first error is always the same one.
func (d *DSN) ApplyParams(backend string, params ...Param) error {
	given := map[int]string{}
	for _, k := range slices.Sorted(maps.Keys(d.Params)) {
		i := slices.IndexFunc(params, func(p Param) bool {
			return slices.ContainsFunc(p.Names, func(n string) bool { return strings.EqualFold(n, k) })
		})
		if i < 0 {
			known := make([]string, len(params))
			for j, p := range params {
				known[j] = p.Names[0]
			}
			slices.Sort(known)
			return fmt.Errorf("%w: %s: unknown parameter %q (known: %s)", ErrBadDSN, backend, k, strings.Join(known, ", "))
		}
		vs := d.Params[k]
		if prev, twice := given[i]; twice || len(vs) != 1 {
			if !twice {
				prev = k
			}
			return fmt.Errorf("%w: %s: parameter %q given more than once (as %q and %q)", ErrBadDSN, backend, params[i].Names[0], prev, k)
		}
		given[i] = k
		if err := params[i].Set(vs[0]); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadDSN, backend, badValue(k, vs[0], err))
		}
	}
	return nil
}

// take reads p, a parameter every backend has, and moves it out of Params,
// so that no backend sees it. Its name is matched as written.
func (d *DSN) take(p Param) error {
	name := p.Names[0]
	vs, ok := d.Params[name]
	if !ok {
		return nil
	}
	delete(d.Params, name)
	if len(vs) != 1 {
		return fmt.Errorf("%w: parameter %q given more than once", ErrBadDSN, name)
	}
	if err := p.Set(vs[0]); err != nil {
		return fmt.Errorf("%w: %w", ErrBadDSN, badValue(name, vs[0], err))
	}
	return nil
}

// badValue is the error of a value a Param's Set refused.
func badValue(name, v string, err error) error {
	return fmt.Errorf("parameter %s=%q: %v", name, v, err)
}

// SecondsParam is a Param's Set for a time (ParseSeconds: a Go duration
// or whole seconds), above zero when positive is set.
func SecondsParam(dst *time.Duration, positive bool) func(string) error {
	return func(v string) error {
		dur, err := ParseSeconds(v)
		if err == nil && positive && dur == 0 {
			err = errors.New("not positive")
		}
		if err == nil {
			*dst = dur
		}
		return err
	}
}

// IntParam is a Param's Set for an integer of at least min.
func IntParam(dst *int, min int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return errors.New("not an integer")
		}
		if n < min {
			return fmt.Errorf("below %d", min)
		}
		*dst = n
		return nil
	}
}

// BoolParam is a Param's Set for 0, 1, true or false.
func BoolParam(dst *bool) func(string) error {
	return func(v string) error {
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return errors.New("want 0 or 1")
		}
		*dst = on
		return nil
	}
}

// ChoiceParam is a Param's Set for one of choices' keys, written in any
// case; it stores the key's value.
func ChoiceParam(dst *string, choices map[string]string) func(string) error {
	return func(v string) error {
		c, ok := choices[strings.ToLower(strings.TrimSpace(v))]
		if !ok {
			return fmt.Errorf("want one of %s", strings.Join(slices.Sorted(maps.Keys(choices)), ", "))
		}
		*dst = c
		return nil
	}
}
