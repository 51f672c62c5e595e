package config

import (
	"reflect"
	"time"

	"toolrouter/config/duration"
)

// Duration is a time.Duration that is written in configuration as a Go duration string ("30s",
// "1m30s", "-1s"); a bare number ("30" or 30 in JSON) is taken as a number of seconds.
type Duration = duration.Duration

var durationType = reflect.TypeOf(Duration(0))

// durationHook is a mapstructure decode hook producing Duration values from
// strings (environment, JSON), numbers of seconds (JSON) and time.Duration
// values (flags).
func durationHook(_, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case Duration:
		return v, nil
	case time.Duration:
		return Duration(v), nil
	case string:
		return duration.Parse(v)
	case []byte:
		return duration.Parse(string(v))
	}
	rv := reflect.ValueOf(data)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return duration.Seconds(float64(rv.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return duration.Seconds(float64(rv.Uint()))
	case reflect.Float32, reflect.Float64:
		return duration.Seconds(rv.Float())
	}
	return data, nil
}
