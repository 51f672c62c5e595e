package retrieve

import (
	"strings"
)

// Values in a question as evidence for the tools whose parameters take them (Matching.Values): a
// question holding a URL meets a tool with a parameter of format "uri" or named "url"; "180 cm"
// meets a parameter described "in centimeters"; "in Fahrenheit" meets a parameter choosing the
// unit; "from May 1 to May 5" meets a tool with a start and an end date. Each kind of value is
// one index key in the parameters field of the tools that take it (valueKey + kind), and a unit
// of measure also one key of its own (unitKey + the unit), so a match is scored by the same
// BM25F as a word, at valueWeight of a word's weight. Neither counts in the field's length.
const (
	// valueKey prefixes a kind of value ("\x04v" + "url").
	valueKey = "\x04v"
	// unitKey prefixes a unit of measure ("\x04u" + "cm").
	unitKey = "\x04u"
)

// The kinds of values, each as its index key.
const (
	kindURL       = valueKey + "url"       // a web address: "https://…", "www.…", "example.com"
	kindEmail     = valueKey + "email"     // an email address
	kindFile      = valueKey + "file"      // a file name or path ("notes.txt", "the csv files")
	kindDate      = valueKey + "date"      // a date: "2024-01-31", "May 5", "tomorrow", "Monday"
	kindDateRange = valueKey + "daterange" // two dates: "from May 1 to May 5"
	kindTime      = valueKey + "time"      // a time of day: "3pm", "10:30", "noon"
	kindYear      = valueKey + "year"      // a year: "in 1940"
	kindUnit      = valueKey + "unit"      // a unit of measure, or "metric", "imperial"
	kindMoney     = valueKey + "money"     // an amount of money or a currency: "$20", "20000 yen", "USD"
	kindCount     = valueKey + "count"     // how many results: "top 5", "10 results"
	kindCoord     = valueKey + "coord"     // a latitude and longitude: "40.71, -74.01"
	kindPercent   = valueKey + "percent"   // a percentage: "15%", "5 percent"
)

// valueWeight is what a value's match counts for against a word's. It was chosen on the tune
// parts of the benchmark's pools alone (go run ./bench retrieval; MetaTool's tools take no
// parameters, so only the BFCL pool moves): recall among the 5 best-ranked on the BFCL pool's
// tune part is 0.944 without values, and with them 0.950 at 0.2 and 0.25, 0.957 at 0.3, 0.954
// at 0.4, 0.950 at 0.5 and 0.7, 0.954 at 1; among the 10, 20 and 50 best it is the same at every
// weight. On the report parts it then found one query more among the 20 and the 50 best-ranked
// on the BFCL pool and lost none at any k ("Matching, one way changed at a time").
const valueWeight = 0.3

// maxValueWords bounds the words of a question or a parameter looked at for values: a pasted
// document costs no more than its first few thousand words.
const maxValueWords = 4096

// units maps the written forms of units of measure to the index key of the unit (unitKey + one
// name per unit). Forms marked short (single letters, ambiguous alone) count only right after a
// number ("5 m", "30°C", "180cm").
var units, shortUnits = map[string]string{}, map[string]string{}

func init() {
	for _, u := range []struct{ canon, forms, short string }{
		{"mm", "mm millimeter millimeters millimetre millimetres", ""},
		{"cm", "cm centimeter centimeters centimetre centimetres", ""},
		{"m", "meter meters metre metres", "m"},
		{"km", "km kms kilometer kilometers kilometre kilometres", ""},
		{"inch", "inch inches", ""},
		{"ft", "ft foot feet", ""},
		{"yd", "yd yds yard yards", ""},
		{"mi", "mile miles", "mi"}, // "mi" alone is Spanish and Italian for "my", "me"
		{"mg", "mg milligram milligrams", ""},
		{"g", "gram grams", "g"},
		{"kg", "kg kgs kilogram kilograms kilo kilos", ""},
		{"lb", "lb lbs pound pounds", ""},
		{"oz", "oz ounce ounces", ""},
		{"t", "ton tons tonne tonnes", ""},
		{"c", "celsius centigrade", "c"},
		{"f", "fahrenheit", "f"},
		{"k", "kelvin", ""},
		{"l", "liter liters litre litres", "l"},
		{"ml", "ml milliliter milliliters millilitre millilitres", ""},
		{"gal", "gal gallon gallons", ""},
		{"mph", "mph", ""},
		{"kph", "kph kmh", ""},
		{"knot", "knot knots", ""},
		{"acre", "acre acres", ""},
		{"ha", "hectare hectares", ""},
		{"j", "joule joules", ""},
		{"kj", "kj kilojoule kilojoules", ""},
		{"kcal", "kcal kilocalorie kilocalories", ""},
		{"kwh", "kwh", ""},
		{"w", "watt watts", ""},
		{"kw", "kw kilowatt kilowatts", ""},
		{"v", "volt volts", ""},
		{"a", "ampere amperes amp amps", ""},
		{"ohm", "ohm ohms", ""},
		{"pa", "pascal pascals", ""},
		{"kpa", "kpa kilopascal kilopascals", ""},
		{"psi", "psi", ""},
		{"atm", "atm atmosphere atmospheres", ""},
		{"hz", "hz hertz", ""},
		{"khz", "khz kilohertz", ""},
		{"mhz", "mhz megahertz", ""},
		{"ghz", "ghz gigahertz", ""},
		{"kb", "kb kilobyte kilobytes", ""},
		{"mb", "mb megabyte megabytes", ""},
		{"gb", "gb gigabyte gigabytes", ""},
		{"tb", "tb terabyte terabytes", ""},
		{"deg", "degree degrees", ""},
		{"rad", "radian radians", ""},
	} {
		for _, f := range strings.Fields(u.forms) {
			units[f] = unitKey + u.canon
		}
		for _, f := range strings.Fields(u.short) {
			shortUnits[f] = unitKey + u.canon
		}
	}
}

// currencies are the words and codes that name a currency. "pound" is left to units.
var currencies = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`usd eur gbp jpy cny rmb inr cad aud chf hkd sgd nzd krw mxn brl rub
		sek nok dkk zar btc dollar dollars euro euros yen yuan renminbi rupee rupees peso pesos franc
		francs ruble rubles rouble roubles sterling bitcoin bitcoins currency currencies`) {
		currencies[w] = true
	}
}

// relativeDays name a day without figures.
var relativeDays = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`today tomorrow yesterday tonight monday tuesday wednesday thursday
		friday saturday sunday weekend`) {
		relativeDays[w] = true
	}
}

// webTLDs are the endings that make "name.ending" a web address rather than a file.
var webTLDs = map[string]bool{"com": true, "org": true, "net": true, "io": true, "dev": true, "edu": true, "gov": true, "co": true, "ai": true, "app": true}

// queryValues calls fn with the key of each kind of value a question holds (valueKey + kind), and
// of each unit of measure it names (unitKey + unit); a key may come more than once. toks are the
// question's lexTokens.
func queryValues(s string, toks []token, fn func(key string)) {
	kind := fn
	fs := strings.Fields(s)
	for i, f := range fs {
		if i >= maxValueWords {
			break
		}
		switch {
		case webAddress(f):
			kind(kindURL)
		case emailAddress(f):
			kind(kindEmail)
		case fileAt(fs, i):
			kind(kindFile)
		}
	}

	num := func(i int) bool { return i >= 0 && i < len(toks) && toks[i].kind == tokNumber }
	word := func(i int, ws ...string) bool {
		if i < 0 || i >= len(toks) || toks[i].kind != tokWord {
			return false
		}
		for _, w := range ws {
			if toks[i].text == w {
				return true
			}
		}
		return false
	}
	sym := func(i int, c string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind == tokSymbol && toks[i].text == c
	}
	dates := 0
	for i, t := range toks {
		if i >= maxValueWords {
			break
		}
		switch t.kind {
		case tokSymbol:
			switch {
			case t.date && !(i >= 2 && toks[i-2].date):
				dates++ // the first separator of a date in figures
			case strings.Contains("$€£¥₹₩₽", t.text) && (num(i+1) || num(i-1)):
				kind(kindMoney)
			case t.text == "%" && num(i-1):
				kind(kindPercent)
			case t.text == ":" && num(i-1) && num(i+1) && len(toks[i+1].text) == 2 && len(toks[i-1].text) <= 2:
				kind(kindTime)
			case t.text == "," && num(i-1) && (num(i+1) || sym(i+1, "-") && num(i+2)) &&
				strings.Contains(toks[i-1].text, ".") && (strings.Contains(toks[i+1].text, ".") || num(i+2) && strings.Contains(toks[i+2].text, ".")):
				kind(kindCoord)
			}
		case tokNumber:
			if len(t.text) == 4 && allDigits(t.text) && t.text >= "1000" && t.text < "2200" && !sym(i-1, "-") && !sym(i-1, "/") &&
				!(i+1 < len(toks) && toks[i+1].date) && !(i > 0 && toks[i-1].date) {
				kind(kindYear)
			}
			if word(i-1, "top", "first", "last", "latest", "best") || word(i+1, "results", "items", "entries", "records", "rows") {
				kind(kindCount)
			}
		case tokWord:
			switch {
			case months[t.text] && (num(i-1) || num(i+1)), relativeDays[t.text]:
				dates++
			case currencies[t.text]:
				kind(kindMoney)
			case t.text == "percent" && num(i-1):
				kind(kindPercent)
			case t.text == "noon" || t.text == "midnight" || (t.text == "am" || t.text == "pm") && num(i-1) || timeOfDay(t.text):
				kind(kindTime)
			}
		}
	}
	if dates > 0 {
		kind(kindDate)
	}
	if dates > 1 {
		kind(kindDateRange)
	}
	unitsIn(s, true, func(u string) {
		if u != "" {
			fn(u)
		}
		kind(kindUnit)
	}, nil)
}

// unitsIn calls fn with each unit of measure s names (its key in units), and "" for the words
// "metric" and "imperial": a unit's short form counts right after a number only, and "MM" in
// capitals is a date's month ("YYYY-MM-DD"), not millimetres. It calls word, unless nil, with
// each of s's words lower-cased.
func unitsIn(s string, bounded bool, fn func(unit string), word func(w string)) {
	n := 0
	prevNum := false
	splitWords(s, func(w string) {
		n++
		if bounded && n > maxValueWords || w == "MM" {
			prevNum = false
			return
		}
		w = strings.ToLower(w)
		if word != nil {
			word(w)
		}
		switch u, ok := units[w]; {
		case ok:
			fn(u)
		case prevNum && shortUnits[w] != "":
			fn(shortUnits[w])
		case w == "metric" || w == "imperial":
			fn("")
		}
		prevNum = w[0] >= '0' && w[0] <= '9'
	})
}

// timeOfDay reports whether a word is a time like "3pm" or "11am".
func timeOfDay(w string) bool {
	i := strings.IndexFunc(w, func(r rune) bool { return r < '0' || r > '9' })
	return (i == 1 || i == 2) && (w[i:] == "am" || w[i:] == "pm")
}

// webAddress reports whether a whitespace-separated field is a web address: it holds "://",
// starts with "www.", or is a name ending in a common web domain ("example.com").
func webAddress(f string) bool {
	f = strings.ToLower(strings.TrimRight(strings.TrimLeft(f, "'\"`([{<"), "'\"`)]}>.,;:!?"))
	if strings.Contains(f, "://") || strings.HasPrefix(f, "www.") && len(f) > 4 {
		return true
	}
	if strings.Contains(f, "@") {
		return false
	}
	host := f
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	i := strings.LastIndexByte(host, '.')
	return i > 0 && webTLDs[host[i+1:]] && isASCIILower(strings.ReplaceAll(strings.ReplaceAll(host[:i], ".", ""), "-", ""))
}

// emailAddress reports whether a whitespace-separated field is an email address: a name, "@", and
// a domain with a dot.
func emailAddress(f string) bool {
	f = strings.TrimRight(strings.TrimLeft(f, "'\"`([{<"), "'\"`)]}>.,;:!?")
	at := strings.IndexByte(f, '@')
	if at < 1 || strings.Count(f, "@") != 1 {
		return false
	}
	dot := strings.LastIndexByte(f, '.')
	return dot > at+1 && dot < len(f)-1
}

// paramValues calls fn with the key of each kind of value the parameters take, and of each unit
// of measure they name, each once.
func paramValues(ps []Param, fn func(key string)) {
	var seen []string
	kind := func(k string) {
		if k == "" {
			return
		}
		for _, s := range seen {
			if s == k {
				return
			}
		}
		seen = append(seen, k)
		fn(k)
	}
	starts, ends, dated := make([]bool, len(ps)), make([]bool, len(ps)), make([]bool, len(ps))
	var nameWords []string
	for i, p := range ps {
		nameWords = nameWords[:0]
		unitsIn(p.Name, false, kind, func(w string) { nameWords = append(nameWords, w) })
		has := func(ws ...string) bool {
			for _, n := range nameWords {
				for _, w := range ws {
					if n == w {
						return true
					}
				}
			}
			return false
		}
		// What the description says, word by word: the units it names, a date's form, money,
		// a percentage, a system of units.
		var yyyy, currency, percent, system bool
		unitsIn(p.Description, false, kind, func(w string) {
			switch w {
			case "yyyy":
				yyyy = true
			case "currency", "currencies":
				currency = true
			case "percent", "percentage":
				percent = true
			case "metric", "imperial":
				system = true
			}
		})
		format := strings.ToLower(p.Format)
		numeric := strings.Contains(p.Type, "integer") || strings.Contains(p.Type, "number")
		date := hasFormat(format, "date", "date-time", "full-date") || has("date", "dates", "datetime", "dob", "birthday") || yyyy
		switch {
		case hasFormat(format, "uri", "url", "iri", "uri-reference", "iri-reference", "hostname") ||
			has("url", "uri", "urls", "link", "href", "website", "webpage", "homepage", "domain", "endpoint"):
			kind(kindURL)
		case hasFormat(format, "email", "idn-email") || has("email", "emails", "mail"):
			kind(kindEmail)
		case has("file", "files", "filename", "filepath", "path", "paths", "dir", "directory", "folder", "attachment"):
			kind(kindFile)
		}
		if date {
			kind(kindDate)
		}
		if hasFormat(format, "time", "date-time") || has("time", "hour") && !numeric {
			kind(kindTime)
		}
		if has("year") {
			kind(kindYear)
		}
		if has("currency", "currencies", "price", "cost", "budget", "salary", "fee", "money", "payment") ||
			currency || has("amount") && strings.ContainsAny(p.Description, "$€£") {
			kind(kindMoney)
		}
		if (has("limit", "count", "topk") || has("results", "items", "k") && has("max", "num", "number", "top")) &&
			(numeric || p.Type == "") {
			kind(kindCount)
		}
		if has("latitude", "longitude", "lat", "lon", "lng", "coordinates", "coords", "coordinate") {
			kind(kindCoord)
		}
		if has("percent", "percentage") || percent || strings.Contains(p.Description, "%") {
			kind(kindPercent)
		}
		if has("unit", "units") || system {
			kind(kindUnit)
		}
		// A unit's short form ("m", "c", "f", "l") names a unit among allowed values only when
		// more than half of them are units: ["C", "F"] and ["C", "F", "K"] are temperature
		// scales, "S", "M", "L", "XL" sizes and "A" to "F" grades.
		unitValues := 0
		for _, v := range p.Enum {
			v := strings.ToLower(v)
			if _, ok := units[v]; ok {
				unitValues++
			} else if _, ok := shortUnits[v]; ok {
				unitValues++
			}
		}
		shortOK := 2*unitValues > len(p.Enum)
		for _, v := range p.Enum {
			v := strings.ToLower(v)
			u, ok := units[v]
			if !ok && shortOK {
				u, ok = shortUnits[v]
			}
			switch {
			case ok:
				kind(kindUnit)
				kind(u)
			case v == "metric" || v == "imperial":
				kind(kindUnit)
			case currencies[v]:
				kind(kindMoney)
			}
		}
		starts[i] = has("start", "from", "begin", "since", "earliest", "min")
		ends[i] = has("end", "to", "until", "till", "latest", "max")
		dated[i] = date || has("time", "day", "month", "year")
	}
	// A start and an end, both of them dates: a range of dates. In one pass, so that a tool of
	// many parameters costs no more than their number.
	nStarts, nEnds := 0, 0
	for i := range ps {
		if starts[i] && dated[i] {
			nStarts++
		}
		if ends[i] && dated[i] {
			nEnds++
		}
	}
	for i := range ps {
		if !dated[i] {
			continue
		}
		if starts[i] && nEnds-b2i(ends[i]) > 0 || ends[i] && nStarts-b2i(starts[i]) > 0 {
			kind(kindDateRange)
			return
		}
	}
}

// allDigits reports whether s is ASCII digits only.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hasFormat reports whether a parameter's format (or one of its alternatives, "a|b") is one of fs.
func hasFormat(format string, fs ...string) bool {
	if format == "" {
		return false
	}
	for _, f := range strings.Split(format, "|") {
		for _, w := range fs {
			if f == w {
				return true
			}
		}
	}
	return false
}
