// Package canonjson implements BPC-CJSON-1, the canonical JSON form whose
// bytes are hashed and signed throughout BPC.
//
// BPC-CJSON-1 rules:
//   - no insignificant whitespace;
//   - object keys sorted by their UTF-8 bytes (not UTF-16 code units);
//   - duplicate object keys are rejected;
//   - numbers must be integers and keep their exact digits ("-0" becomes
//     "0"); any fraction or exponent is rejected, decimals travel as strings;
//   - strings are escaped minimally: only '"', '\' and U+0000–U+001F are
//     escaped (\b \f \n \r \t, otherwise \u00xx in lowercase hex); everything
//     else, including non-ASCII, is written as raw UTF-8;
//   - invalid UTF-8 and lone surrogate escapes are rejected;
//   - literals true, false and null are kept; arrays keep their order;
//   - nothing may follow the top-level value.
//
// The package is pure: no I/O, no clock, no randomness, and its output never
// depends on map iteration order.
package canonjson

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that Canonicalize accepts.
const MaxDepth = 1000

// ErrSyntax reports that the input is not well-formed JSON.
var ErrSyntax = errors.New("invalid JSON")

// ErrNonInteger reports a number with a fraction or an exponent.
var ErrNonInteger = errors.New("non-integer number")

// ErrDuplicateKey reports an object that repeats a key.
var ErrDuplicateKey = errors.New("duplicate object key")

// ErrInvalidUTF8 reports a string that is not valid UTF-8 or holds a lone surrogate escape.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// ErrTooDeep reports nesting of arrays and objects beyond MaxDepth.
var ErrTooDeep = errors.New("nesting too deep")

// Canonicalize parses JSON text and returns its BPC-CJSON-1 canonical bytes.
func Canonicalize(data []byte) ([]byte, error) {
	return canonicalizeAppend(make([]byte, 0, len(data)), data)
}

// canonicalizeAppend appends the canonical form of data to dst.
func canonicalizeAppend(dst, data []byte) ([]byte, error) {
	p := &parser{data: data, out: dst}
	p.skipWS()
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.skipWS()
	if p.pos < len(p.data) {
		return nil, p.syntaxErr("trailing data after top-level value")
	}
	return p.out, nil
}

// Marshal encodes a Go value (anything encoding/json can marshal) as
// canonical bytes; see Append for the shapes it writes directly.
func Marshal(v any) ([]byte, error) {
	out, err := Append(nil, v)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Valid reports whether data is already in canonical form (Canonicalize(data) == data).
func Valid(data []byte) bool {
	out, err := Canonicalize(data)
	return err == nil && bytes.Equal(out, data)
}

// pathSeg is one step of a JSON path: an object key or an array index.
type pathSeg struct {
	index int // array index, or start of the key in parser.keys
	end   int // end of the key in parser.keys
	isKey bool
}

// member is one encoded `"key":value` pair of an object being canonicalized,
// located in parser.out at [start, end), with its decoded key in
// parser.keys at [kStart, kEnd).
type member struct {
	kStart, kEnd int
	start, end   int
}

type parser struct {
	data    []byte
	pos     int
	out     []byte
	path    []pathSeg
	scratch []byte   // decoded contents of the last string read
	keys    []byte   // decoded keys of the objects being parsed, as a stack
	members []member // members of the objects being parsed, as a stack
	tmp     []byte   // scratch copy used while reordering an object
}

func (p *parser) skipWS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// pathString renders the current path, e.g. $.a[2]["x y"].
func (p *parser) pathString() string {
	var sb strings.Builder
	sb.WriteByte('$')
	for _, s := range p.path {
		if !s.isKey {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(s.index))
			sb.WriteByte(']')
			continue
		}
		key := string(p.keys[s.index:s.end])
		if isIdent(key) {
			sb.WriteByte('.')
			sb.WriteString(key)
		} else {
			sb.WriteByte('[')
			sb.WriteString(strconv.Quote(key))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func (p *parser) syntaxErr(msg string) error {
	return fmt.Errorf("canonjson: %w at %s (byte %d): %s", ErrSyntax, p.pathString(), p.pos, msg)
}

func (p *parser) unexpected(want string) error {
	if p.pos >= len(p.data) {
		return p.syntaxErr("unexpected end of input, expected " + want)
	}
	return p.syntaxErr(fmt.Sprintf("unexpected character %q, expected %s", p.data[p.pos], want))
}

// value parses one JSON value at p.pos (whitespace already skipped) and
// appends its canonical form to p.out. depth is the number of enclosing
// arrays and objects.
func (p *parser) value(depth int) error {
	if p.pos >= len(p.data) {
		return p.unexpected("a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		if err := p.str(); err != nil {
			return err
		}
		p.out = appendStr(p.out, p.scratch)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		return p.unexpected("a value")
	}
}

func (p *parser) literal(lit string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
		return p.syntaxErr("invalid literal, expected " + lit)
	}
	p.pos += len(lit)
	p.out = append(p.out, lit...)
	return nil
}

func (p *parser) enter(depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("canonjson: %w at %s (byte %d): more than %d levels of arrays and objects",
			ErrTooDeep, p.pathString(), p.pos, MaxDepth)
	}
	return nil
}

func (p *parser) array(depth int) error {
	if err := p.enter(depth); err != nil {
		return err
	}
	p.pos++ // '['
	p.out = append(p.out, '[')
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		return nil
	}
	p.path = append(p.path, pathSeg{})
	for i := 0; ; i++ {
		p.path[len(p.path)-1] = pathSeg{index: i}
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.skipWS()
		if err := p.value(depth); err != nil {
			return err
		}
		p.skipWS()
		if p.pos >= len(p.data) {
			return p.unexpected("',' or ']'")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.path = p.path[:len(p.path)-1]
			p.out = append(p.out, ']')
			return nil
		default:
			return p.unexpected("',' or ']'")
		}
	}
}

func (p *parser) object(depth int) error {
	if err := p.enter(depth); err != nil {
		return err
	}
	p.pos++ // '{'
	p.skipWS()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '{', '}')
		return nil
	}
	base := len(p.out)
	keysBase := len(p.keys)
	membersBase := len(p.members)
	p.path = append(p.path, pathSeg{})
	for {
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.unexpected("a string object key")
		}
		if err := p.str(); err != nil {
			return err
		}
		kStart := len(p.keys)
		p.keys = append(p.keys, p.scratch...)
		kEnd := len(p.keys)
		start := len(p.out)
		p.out = appendStr(p.out, p.scratch)
		p.out = append(p.out, ':')
		p.path[len(p.path)-1] = pathSeg{index: kStart, end: kEnd, isKey: true}
		p.skipWS()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.unexpected("':'")
		}
		p.pos++
		p.skipWS()
		if err := p.value(depth); err != nil {
			return err
		}
		p.members = append(p.members, member{kStart: kStart, kEnd: kEnd, start: start, end: len(p.out)})
		p.skipWS()
		if p.pos >= len(p.data) {
			return p.unexpected("',' or '}'")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] != '}' {
			return p.unexpected("',' or '}'")
		}
		p.pos++
		break
	}
	p.path = p.path[:len(p.path)-1]

	// Sort by the decoded key bytes, which is exactly UTF-8 byte order.
	members := p.members[membersBase:]
	keys := p.keys
	slices.SortFunc(members, func(a, b member) int {
		return bytes.Compare(keys[a.kStart:a.kEnd], keys[b.kStart:b.kEnd])
	})
	for i := 1; i < len(members); i++ {
		prev, cur := keys[members[i-1].kStart:members[i-1].kEnd], keys[members[i].kStart:members[i].kEnd]
		if bytes.Equal(prev, cur) {
			return fmt.Errorf("canonjson: %w %s at %s", ErrDuplicateKey, strconv.Quote(string(cur)), p.pathString())
		}
	}
	p.tmp = append(p.tmp[:0], p.out[base:]...)
	p.out = append(p.out[:base], '{')
	for i, m := range members {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.out = append(p.out, p.tmp[m.start-base:m.end-base]...)
	}
	p.out = append(p.out, '}')
	p.members = p.members[:membersBase]
	p.keys = p.keys[:keysBase]
	return nil
}

// number validates a JSON number at p.pos and appends it if it is an integer.
func (p *parser) number() error {
	start := p.pos
	d := p.data
	i := p.pos
	neg := false
	if d[i] == '-' {
		neg = true
		i++
	}
	var err error
	if i < len(d) && d[i] == '0' {
		i++
	} else if i, err = p.digits(i, "a digit"); err != nil {
		return err
	}
	intEnd := i
	frac := false
	if i < len(d) && d[i] == '.' {
		frac = true
		if i, err = p.digits(i+1, "a digit after the decimal point"); err != nil {
			return err
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		frac = true
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i, err = p.digits(i, "a digit in the exponent"); err != nil {
			return err
		}
	}
	if frac {
		return fmt.Errorf("canonjson: %w %s at %s: decimals must travel as strings",
			ErrNonInteger, d[start:i], p.pathString())
	}
	p.pos = i
	digits := d[start:intEnd]
	if neg && intEnd-start == 2 && d[start+1] == '0' {
		digits = digits[1:] // -0 → 0
	}
	p.out = append(p.out, digits...)
	return nil
}

// digits returns the end of the run of digits at offset i, which must hold
// at least one; without one it fails at i, expecting what.
func (p *parser) digits(i int, what string) (int, error) {
	d := p.data
	if i >= len(d) || d[i] < '0' || d[i] > '9' {
		p.pos = i
		return i, p.unexpected(what)
	}
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i, nil
}

// str parses a JSON string at p.pos (which holds '"') and leaves its decoded
// UTF-8 contents in p.scratch.
func (p *parser) str() error {
	p.pos++ // opening quote
	p.scratch = p.scratch[:0]
	d := p.data
	for {
		// Copy a run of plain bytes in one go.
		runStart := p.pos
		for p.pos < len(d) {
			c := d[p.pos]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			p.pos++
		}
		p.scratch = append(p.scratch, d[runStart:p.pos]...)
		if p.pos >= len(d) {
			return p.syntaxErr("unterminated string")
		}
		c := d[p.pos]
		switch {
		case c == '"':
			p.pos++
			return nil
		case c < 0x20:
			return p.syntaxErr(fmt.Sprintf("unescaped control character %q in string", c))
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return fmt.Errorf("canonjson: %w at %s (byte %d): invalid UTF-8 byte 0x%02x in string",
					ErrInvalidUTF8, p.pathString(), p.pos, c)
			}
			p.scratch = append(p.scratch, d[p.pos:p.pos+size]...)
			p.pos += size
		default: // backslash
			if err := p.escape(); err != nil {
				return err
			}
		}
	}
}

// escape decodes one backslash escape at p.pos into p.scratch.
func (p *parser) escape() error {
	d := p.data
	if p.pos+1 >= len(d) {
		p.pos++
		return p.syntaxErr("unterminated string")
	}
	e := d[p.pos+1]
	var b byte
	switch e {
	case '"', '\\', '/':
		b = e
	case 'b':
		b = '\b'
	case 'f':
		b = '\f'
	case 'n':
		b = '\n'
	case 'r':
		b = '\r'
	case 't':
		b = '\t'
	case 'u':
		return p.unicodeEscape()
	default:
		p.pos++
		return p.syntaxErr(fmt.Sprintf("invalid escape character %q", e))
	}
	p.scratch = append(p.scratch, b)
	p.pos += 2
	return nil
}

// unicodeEscape decodes \uXXXX (or a \uXXXX\uXXXX surrogate pair) at p.pos.
func (p *parser) unicodeEscape() error {
	r, err := p.hex4(p.pos + 2)
	if err != nil {
		return err
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return p.surrogateErr(fmt.Sprintf("lone low surrogate \\u%04x", r))
	case r >= 0xD800 && r <= 0xDBFF:
		next := p.pos + 6
		if next+1 >= len(p.data) || p.data[next] != '\\' || p.data[next+1] != 'u' {
			return p.surrogateErr(fmt.Sprintf("lone high surrogate \\u%04x", r))
		}
		lo, err := p.hex4(next + 2)
		if err != nil {
			return err
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return p.surrogateErr(fmt.Sprintf("high surrogate \\u%04x not followed by a low surrogate", r))
		}
		r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
		p.pos += 12
	default:
		p.pos += 6
	}
	p.scratch = utf8.AppendRune(p.scratch, r)
	return nil
}

func (p *parser) surrogateErr(msg string) error {
	return fmt.Errorf("canonjson: %w at %s (byte %d): %s", ErrInvalidUTF8, p.pathString(), p.pos, msg)
}

// hex4 reads four hex digits starting at i.
func (p *parser) hex4(i int) (rune, error) {
	var r rune
	for k := range 4 {
		if i+k >= len(p.data) {
			p.pos = len(p.data)
			return 0, p.syntaxErr("unterminated \\u escape")
		}
		c := p.data[i+k]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			p.pos = i + k
			return 0, p.syntaxErr(fmt.Sprintf("invalid hex digit %q in \\u escape", c))
		}
		r = r<<4 | rune(v)
	}
	return r, nil
}

const hexDigits = "0123456789abcdef"
