;; pools: an example sandgate policy plugin in WebAssembly text, no SDK, no runtime.
;;
;; At sandbox create (route "POST /v1/sandboxes"), a sandbox labelled pool=X is placed
;; only on nodes labelled pool=X: the route answer is allow with the pool selector
;; {"pool": X}. Every other request is allowed with no selector. It has no init and no
;; budget hook, so budgets stay the operator's defaults.
;;
;; Build (wabt):   wat2wasm -o pools.wasm pools.wat
;; The built pools.wasm is committed; pools_test.go checks that it matches this file
;; whenever wat2wasm is installed.
;;
;; Memory: page 0 holds constants; the request buffer starts at 65536 and the answer is
;; written right after the request. sandgate_alloc grows memory to fit both.
(module
  (memory (export "memory") 2)
  (data (i32.const 16) "POST /v1/sandboxes")  ;; 18 bytes
  (data (i32.const 48) "pool")                ;; 4 bytes

  (global $pos (mut i32) (i32.const 0))  ;; read cursor
  (global $end (mut i32) (i32.const 0))  ;; end of the request
  (global $sp (mut i32) (i32.const 0))   ;; last string read: pointer
  (global $sl (mut i32) (i32.const 0))   ;; last string read: length

  (func (export "sandgate_abi_version") (result i32) (i32.const 1))

  (func (export "sandgate_alloc") (param $n i32) (result i32)
    (local $need i32)
    (local.set $need
      (i32.shr_u
        (i32.add (i32.add (i32.const 65600) (i32.shl (local.get $n) (i32.const 1))) (i32.const 65535))
        (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))

  ;; $byte reads one byte; reading past the end traps (the host discards the instance).
  (func $byte (result i32)
    (local $b i32)
    (if (i32.ge_u (global.get $pos) (global.get $end)) (then unreachable))
    (local.set $b (i32.load8_u (global.get $pos)))
    (global.set $pos (i32.add (global.get $pos) (i32.const 1)))
    (local.get $b))

  ;; $uv reads an unsigned LEB128 integer of up to 32 bits.
  (func $uv (result i32)
    (local $v i32) (local $shift i32) (local $b i32)
    (loop $more
      (local.set $b (call $byte))
      (local.set $v (i32.or (local.get $v)
        (i32.shl (i32.and (local.get $b) (i32.const 0x7f)) (local.get $shift))))
      (local.set $shift (i32.add (local.get $shift) (i32.const 7)))
      (br_if $more (i32.and (local.get $b) (i32.const 0x80))))
    (local.get $v))

  ;; $str reads a string into $sp/$sl.
  (func $str
    (global.set $sl (call $uv))
    (global.set $sp (global.get $pos))
    (if (i32.gt_u (global.get $sl) (i32.sub (global.get $end) (global.get $pos))) (then unreachable))
    (global.set $pos (i32.add (global.get $pos) (global.get $sl))))

  (func $eq (param $a i32) (param $al i32) (param $b i32) (param $bl i32) (result i32)
    (local $i i32)
    (if (i32.ne (local.get $al) (local.get $bl)) (then (return (i32.const 0))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $al)))
        (if (i32.ne (i32.load8_u (i32.add (local.get $a) (local.get $i)))
                    (i32.load8_u (i32.add (local.get $b) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 1))

  ;; $putuv writes v as LEB128 at p and returns the position after it.
  (func $putuv (param $p i32) (param $v i32) (result i32)
    (local $b i32)
    (loop $more
      (local.set $b (i32.and (local.get $v) (i32.const 0x7f)))
      (local.set $v (i32.shr_u (local.get $v) (i32.const 7)))
      (if (local.get $v) (then (local.set $b (i32.or (local.get $b) (i32.const 0x80)))))
      (i32.store8 (local.get $p) (local.get $b))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $more (local.get $v)))
    (local.get $p))

  (func (export "sandgate_route") (param $p i32) (param $n i32) (result i64)
    (local $routeP i32) (local $routeL i32) (local $count i32)
    (local $kp i32) (local $kl i32) (local $poolP i32) (local $poolL i32)
    (local $out i32) (local $w i32)
    (global.set $pos (local.get $p))
    (global.set $end (i32.add (local.get $p) (local.get $n)))
    (local.set $poolL (i32.const -1))
    (if (i32.ne (call $byte) (i32.const 0x02)) (then unreachable))  ;; route request tag
    (call $str)                                                    ;; tenant
    (call $str)                                                    ;; method
    (call $str)                                                    ;; route
    (local.set $routeP (global.get $sp))
    (local.set $routeL (global.get $sl))
    (call $str)                                                    ;; sandbox id
    (local.set $count (call $uv))                                  ;; labels
    (block $done
      (loop $label
        (br_if $done (i32.eqz (local.get $count)))
        (call $str)
        (local.set $kp (global.get $sp))
        (local.set $kl (global.get $sl))
        (call $str)
        (if (call $eq (local.get $kp) (local.get $kl) (i32.const 48) (i32.const 4))
          (then (local.set $poolP (global.get $sp)) (local.set $poolL (global.get $sl))))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $label)))
    ;; The command that follows is not needed.

    ;; Answer: tag 0x82, verdict allow, status 0, empty reason, then the pool selector.
    (local.set $out (global.get $end))
    (i32.store (local.get $out) (i32.const 0x00000082))  ;; bytes 82 00 00 00
    (local.set $w (i32.add (local.get $out) (i32.const 4)))
    (if (i32.and
          (i32.ge_s (local.get $poolL) (i32.const 0))
          (call $eq (local.get $routeP) (local.get $routeL) (i32.const 16) (i32.const 18)))
      (then
        (i32.store8 (local.get $w) (i32.const 1))                       ;; one entry
        (i32.store8 (i32.add (local.get $w) (i32.const 1)) (i32.const 4)) ;; "pool"
        (i32.store (i32.add (local.get $w) (i32.const 2)) (i32.load (i32.const 48)))
        (local.set $w (call $putuv (i32.add (local.get $w) (i32.const 6)) (local.get $poolL)))
        (memory.copy (local.get $w) (local.get $poolP) (local.get $poolL))
        (local.set $w (i32.add (local.get $w) (local.get $poolL))))
      (else
        (i32.store8 (local.get $w) (i32.const 0))
        (local.set $w (i32.add (local.get $w) (i32.const 1)))))
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $out)) (i64.const 32))
      (i64.extend_i32_u (i32.sub (local.get $w) (local.get $out)))))
)
