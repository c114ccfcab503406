package rules

import "github.com/cockroachdb/apd/v3"

// File is a parsed rule source: its field declarations in source order.
type File struct {
	Fields []*FieldDecl
	nodes  int // syntax nodes, as Parse counted them against Limits.MaxNodes
}

// FieldDecl is `field a.b.c : Type = expr ;`.
type FieldDecl struct {
	Path string
	Pos  Pos // position of the path
	Type *Type
	Expr Expr
}

// Expr is an expression node; every node knows its source position.
type Expr interface {
	Position() Pos
}

// BoolLit is true or false.
type BoolLit struct {
	At  Pos
	Val bool
}

// IntLit is an integer literal such as 42.
type IntLit struct {
	At  Pos
	Val int64
}

// DecLit is a decimal literal such as 12.50; Text keeps its exact digits.
type DecLit struct {
	At   Pos
	Text string
	val  *apd.Decimal // parsed once by the parser; shared, never modified
}

// StringLit is a double-quoted string literal (already unescaped).
type StringLit struct {
	At  Pos
	Val string
}

// DateLit is date("YYYY-MM-DD"), validated by the parser.
type DateLit struct {
	At  Pos
	Val string
}

// NoneLit is `none`, the empty Opt.
type NoneLit struct {
	At Pos
}

// Ident is a reference to a let-bound or lambda-bound variable, or a unit
// name in a unit argument position.
type Ident struct {
	At   Pos
	Name string
}

// Unary is `!x` or `-x`.
type Unary struct {
	At Pos
	Op string
	X  Expr
}

// Binary is `l op r` for || && == != < <= > >= + - * /.
type Binary struct {
	At   Pos // position of the operator
	Op   string
	L, R Expr
}

// If is `if (cond) then a else b`.
type If struct {
	At               Pos
	Cond, Then, Else Expr
}

// Let is `let name = value; body`.
type Let struct {
	At    Pos
	Name  string
	Value Expr
	Body  Expr
}

// Assert is `assert(cond, "CODE", "message"); body`.
type Assert struct {
	At      Pos
	Cond    Expr
	Code    string
	CodePos Pos
	Message string
	Body    Expr
}

// Call is `name(args...)`; for record(...) Names holds the member names.
type Call struct {
	At    Pos
	Name  string
	Args  []Expr
	Names []string
	typ   *Type // result type, set by the checker
}

// Lambda is `(x) => body` or `(acc, x) => body`, allowed only as an argument
// of map, filter, fold and toMap.
type Lambda struct {
	At     Pos
	Params []string
	Body   Expr
}

// Position returns the node's source position.
func (e *BoolLit) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *IntLit) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *DecLit) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *StringLit) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *DateLit) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *NoneLit) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *Ident) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *Unary) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *Binary) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *If) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *Let) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *Assert) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *Call) Position() Pos { return e.At }

// Position returns the node's source position.
func (e *Lambda) Position() Pos { return e.At }
