package contract

// The packages the generated clients import, so that `go mod tidy` keeps
// them (and their versions) in tools/go.mod: the clients are generated into
// temporary packages of this module while the tests run.
import (
	// oapi-codegen's default configuration: client, models, Echo server,
	// embedded document.
	_ "github.com/getkin/kin-openapi/openapi3"
	_ "github.com/labstack/echo/v4"
	_ "github.com/oapi-codegen/runtime"
	_ "github.com/oapi-codegen/runtime/types"

	// ogen.
	_ "github.com/go-faster/errors"
	_ "github.com/go-faster/jx"
	_ "github.com/ogen-go/ogen/conv"
	_ "github.com/ogen-go/ogen/http"
	_ "github.com/ogen-go/ogen/json"
	_ "github.com/ogen-go/ogen/middleware"
	_ "github.com/ogen-go/ogen/ogenerrors"
	_ "github.com/ogen-go/ogen/otelogen"
	_ "github.com/ogen-go/ogen/uri"
	_ "github.com/ogen-go/ogen/validate"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/attribute"
	_ "go.opentelemetry.io/otel/codes"
	_ "go.opentelemetry.io/otel/metric"
	_ "go.opentelemetry.io/otel/semconv/v1.39.0"
	_ "go.opentelemetry.io/otel/trace"
)
