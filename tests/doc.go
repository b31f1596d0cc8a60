// Package tests drives the real resident binary over stdio, as a host would.
//
// Scripts under testdata/script are testscript files (see
// github.com/rogpeppe/go-internal/testscript). Besides the standard commands
// they have `rpc`, which holds a live session with a resident process:
//
//	rpc start [resident flags...]      spawn the resident (state in $WORK/state) on $PROVIDER
//	                                   unless the flags name a --provider
//	rpc call METHOD [JSON]             send a request, wait, print the response
//	rpc send NAME METHOD [JSON]        send a request without waiting; NAME labels it
//	rpc await NAME                     wait for NAME's response and print it
//	rpc cancel NAME                    send $/cancelRequest for NAME
//	rpc notify METHOD [JSON]           send a notification
//	rpc raw TEXT                       write TEXT to stdin as is (\r and \n become CR, LF)
//	rpc output EXEC_ID STREAM          print the decoded exec/output bytes so far
//	rpc notes METHOD                   print the notifications of METHOD, one per line
//	rpc close                          close stdin and wait for the exit
//	rpc kill                           SIGKILL the resident
//	rpc exit CODE                      assert the exit code (after close or on its own)
//	rpc stderr                         print the resident's stderr (its logs)
//	rpc stdout                         print every byte the resident wrote on stdout
//
// Responses print as one JSON line with "id" removed, so scripts can match
// them with `stdout`. JSON arguments may use $VARS; `rpc call` also sets
// $RESULT_<field> for each string field of a result object (e.g.
// $RESULT_sandbox_id), so later lines can use it.
//
// Each session runs once per provider under test (Providers: the
// comma-separated RESIDENT_PROVIDERS, or local and, when an engine answers,
// docker). $PROVIDER names it, $IMAGE is an image its sandboxes can run, and
// the condition [NAME] holds on provider NAME only, for the lines that hold
// for one backend alone. Sessions only Docker has live in tests/docker.
package tests
