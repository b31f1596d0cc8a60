// Package protocol is the single source of truth for resident's wire: method
// names, parameter and result types, error kinds and codes, and the frame codec.
//
// Encoding rules, relied on by every host:
//
//   - A frame is "Content-Length: N\r\n\r\n" followed by N bytes of UTF-8 JSON.
//     Header names are case-insensitive; headers other than Content-Length are
//     ignored. 0 < N <= the announced max_frame_bytes.
//   - Raw bytes (process output, file data, stdin) are base64 (standard
//     alphabet, padded) in fields named "data"; they are never decoded as text.
//   - Lists in results are never null: an empty list is [].
//   - Optional fields are omitted when empty; absent and zero mean the same.
//   - Parameter object keys are matched exactly (case-sensitive) and may appear
//     once per object; a duplicate or case-variant key is invalid_request. This
//     stops an owner tag or field from being smuggled past a check that saw a
//     different spelling than the decoder used.
package protocol
