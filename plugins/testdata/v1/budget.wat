;; A policy plugin of ABI version 1, as modules built before version 2 are: its budget
;; answer has the five fields of version 1. It answers max_processes = the length of the
;; budget request it was sent, so a test can check that the host spoke version 1 to it;
;; every other field is 0 (the operator's default).
;;
;; Build (wabt):   wat2wasm -o budget.wasm budget.wat
;; budget.wasm is committed; plugins' tests check it against this file when wat2wasm is
;; installed.
(module
  (memory (export "memory") 1)

  (func (export "sandgate_abi_version") (result i32) (i32.const 1))

  ;; Requests go at 4096; budget requests are far smaller than the rest of the page.
  (func (export "sandgate_alloc") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const 60000)) (then (return (i32.const 0))))
    (i32.const 4096))

  ;; The answer is written at 1024: tag 0x81, then five LEB128 integers.
  (func (export "sandgate_budget") (param $p i32) (param $len i32) (result i64)
    (local $at i32) (local $v i32)
    (i32.store8 (i32.const 1024) (i32.const 0x81))
    (i32.store8 (i32.const 1025) (i32.const 0))  ;; idle_ttl_ms
    (i32.store8 (i32.const 1026) (i32.const 0))  ;; max_duration_ms
    (local.set $at (i32.const 1027))             ;; max_processes = len
    (local.set $v (local.get $len))
    (loop $more
      (if (i32.ge_u (local.get $v) (i32.const 0x80))
        (then
          (i32.store8 (local.get $at) (i32.or (i32.and (local.get $v) (i32.const 0x7f)) (i32.const 0x80)))
          (local.set $v (i32.shr_u (local.get $v) (i32.const 7)))
          (local.set $at (i32.add (local.get $at) (i32.const 1)))
          (br $more))))
    (i32.store8 (local.get $at) (local.get $v))
    (i32.store8 (i32.add (local.get $at) (i32.const 1)) (i32.const 0))  ;; max_exec_timeout_ms
    (i32.store8 (i32.add (local.get $at) (i32.const 2)) (i32.const 0))  ;; output_buffer_bytes
    (i64.or
      (i64.shl (i64.const 1024) (i64.const 32))
      (i64.extend_i32_u (i32.sub (i32.add (local.get $at) (i32.const 3)) (i32.const 1024)))))
)
