/* boot-sector.S: a boot sector for test-guest-boot.sh.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A boot sector for test-guest-boot.sh.  The BIOS loads it from the
 * disk served through adaptra and jumps to it; it then reads the
 * next 8 MiB of the disk through the BIOS (int 13h extended reads of
 * 32K, in order, like a boot loader loading a kernel), hashes it,
 * prints "SUM xxxxxxxx" on the first serial port and makes qemu exit
 * through the isa-debug-exit device (status 33; 35 on a read error).
 *
 * The hash, over little-endian 32-bit words w: h = rol (h, 5) ^ w,
 * from h = 0.  It depends on the order of the data, so a block read
 * from the wrong place changes it.
 */

  .code16
  .intel_syntax noprefix
  .globl _start

  .set CHUNK_SECTORS, 64          /* 32K per read */
  .set CHUNKS, 256                /* 8 MiB in all */
  .set BUFFER_SEGMENT, 0x1000     /* linear 0x10000, clear of us */
  .set SERIAL, 0x3f8
  .set DEBUG_EXIT, 0xf4

_start:
  cli
  xor ax, ax
  mov ds, ax
  mov ss, ax
  mov sp, 0x7c00
  sti
  mov [drive], dl               /* the BIOS passes the boot drive in dl */
  xor ebx, ebx                  /* the hash */
  mov bp, CHUNKS

next_chunk:
  mov si, offset dap
  mov dl, [drive]
  mov ah, 0x42
  int 0x13
  jc read_error

  push ds
  mov ax, BUFFER_SEGMENT
  mov ds, ax
  xor si, si
  mov cx, CHUNK_SECTORS * 512 / 4
hash_word:
  lodsd
  rol ebx, 5
  xor ebx, eax
  loop hash_word
  pop ds

  add dword ptr [dap_lba], CHUNK_SECTORS
  dec bp
  jnz next_chunk

  mov si, offset sum_label
  call print
  mov cx, 8
hex_digit:
  rol ebx, 4
  mov al, bl
  and al, 0x0f
  add al, '0'
  cmp al, '9'
  jbe 1f
  add al, 'a' - '0' - 10
1:
  call putc
  loop hex_digit
  mov al, '\n'
  call putc
  mov al, 0x10                  /* qemu exits with (0x10 << 1) | 1 = 33 */
  out DEBUG_EXIT, al
  jmp halt

read_error:
  mov si, offset error_label
  call print
  mov al, 0x11                  /* 35 */
  out DEBUG_EXIT, al
halt:
  hlt
  jmp halt

/* print: the NUL-terminated string at ds:si.  putc: the byte in al. */
print:
  lodsb
  test al, al
  jz 2f
  call putc
  jmp print
2:
  ret

putc:
  push dx
  mov dx, SERIAL
  out dx, al
  pop dx
  ret

/* The int 13h disk address packet: size, sectors, buffer, start LBA
 * (sector 0 is this boot sector; the hashed data follows it). */
dap:
  .byte 16, 0
  .word CHUNK_SECTORS
  .word 0, BUFFER_SEGMENT
dap_lba:
  .quad 1

drive:
  .byte 0
sum_label:
  .asciz "SUM "
error_label:
  .asciz "READ ERROR\n"

  .org 510
  .word 0xaa55
