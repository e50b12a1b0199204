package server

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/secprofile"
)

// unknownEnum names the first enum value in m that its enum does not
// define, with the path of its field ("" when there is none). protobuf
// keeps such a value as a bare number: read as a known one (a switch's
// default branch), it would pick a behaviour the client never asked for,
// as a newer kubelet's SecurityProfile type OCI once ran unconfined. Every
// request is checked once, at the edge, so that no translation has to
// default an enum it does not know.
func unknownEnum(m protoreflect.Message, path string) string {
	var found string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		found = unknownEnumIn(fd, v, join(path, string(fd.Name())))
		return found == ""
	})
	return found
}

// unknownEnumIn checks one set field: an enum, a message, or a list or map
// of either (map keys cannot be enums).
func unknownEnumIn(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) string {
	switch {
	case fd.IsList():
		l := v.List()
		for i := 0; i < l.Len(); i++ {
			if p := unknownEnumValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case fd.IsMap():
		var found string
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			found = unknownEnumValue(fd.MapValue(), mv, fmt.Sprintf("%s[%q]", path, truncate(k.String(), 64)))
			return found == ""
		})
		return found
	default:
		return unknownEnumValue(fd, v, path)
	}
	return ""
}

func unknownEnumValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) string {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByNumber(v.Enum()) == nil {
			return fmt.Sprintf("%s: unknown %s value %d", path, fd.Enum().FullName(), v.Enum())
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return unknownEnum(v.Message(), path)
	}
	return ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// checkEnums refuses a request that carries an enum value the CRI minicri
// speaks does not define (InvalidArgument, naming the field).
func checkEnums(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	if p := unknownEnum(m.ProtoReflect(), ""); p != "" {
		if _, ok := req.(*runtimeapi.PullSecurityProfileRequest); ok {
			// A permanent refusal, which the kubelet must not retry.
			return invalid(secprofile.ErrInvalid.Error() + ": request field " + p)
		}
		return invalid("request field " + p)
	}
	return nil
}

// enumCheckedStream checks every message a streaming call receives.
type enumCheckedStream struct{ grpc.ServerStream }

func (s enumCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return checkEnums(m)
}
